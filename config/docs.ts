/**
 * Generates `docs/configuration.md` from the schemas: per section, a table
 * of every key path with its type, default, range and meaning, read from
 * the metadata `config/schema/fields.ts` attaches. Because the page is
 * generated, it cannot drift; `test/config/docs.test.ts` regenerates it and
 * compares. Run: `npm run docs:config`. What this build does not serve
 * (`config/not-served.ts`) is listed after the introduction and marked
 * "Not served yet" on its section or rows.
 */
import { pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { INTRO } from './docs-intro.ts';
import { NOT_SERVED, type NotServed } from './not-served.ts';
import { ConfigSchema } from './schema.ts';
import { elementOf, enumValues, type Layer, shapeOf, unwrap } from './schema-walk.ts';

type Row = { path: string; type: string; default: string; range: string; meaning: string };

function isWholeNumber(layer: Layer): boolean {
  const checks = (layer.core._zod.def as { checks?: { _zod: { def: { check?: string; format?: string } } }[] }).checks ?? [];
  return checks.some((check) => check._zod.def.check === 'number_format' && check._zod.def.format === 'safeint');
}

function typeOf(layer: Layer): string {
  if (typeof layer.meta.type === 'string') return layer.meta.type;
  switch (layer.kind) {
    case 'string':
      return 'text';
    case 'number':
      return isWholeNumber(layer) ? 'whole number' : 'number';
    case 'boolean':
      return 'true/false';
    case 'enum':
      return enumValues(layer.core).join(' | ');
    case 'object':
      return 'object';
    case 'array': {
      const element = elementOf(layer.core);
      if (element === null) return 'list';
      const inner = unwrap(element);
      return inner.kind === 'object' ? 'list of objects' : `list of ${typeOf(inner)}`;
    }
    default:
      return 'value';
  }
}

function defaultOf(layer: Layer): string {
  if (layer.hasDefault) {
    if (layer.kind === 'object') return '';
    return `\`${JSON.stringify(layer.defaultValue)}\``;
  }
  return layer.optional ? 'absent' : 'required';
}

function cell(text: string): string {
  return text.replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\|/g, '\\|');
}

function walk(schema: z.core.$ZodType, path: string[], rows: Row[]): void {
  const layer = unwrap(schema);
  rows.push({
    path: path.join(':'),
    type: typeOf(layer),
    default: defaultOf(layer),
    range: typeof layer.meta.range === 'string' ? layer.meta.range : '',
    meaning: typeof layer.meta.description === 'string' ? layer.meta.description : '',
  });
  const shape = shapeOf(layer.core);
  if (shape !== null) {
    for (const [key, child] of Object.entries(shape)) walk(child, [...path, key], rows);
    return;
  }
  const element = elementOf(layer.core);
  if (element !== null && shapeOf(unwrap(element).core) !== null) {
    for (const [key, child] of Object.entries(shapeOf(unwrap(element).core) ?? {})) walk(child, [...path, '[]', key], rows);
  }
}

/** Why the setting at `path` is not served, as the docs say it. */
function notServedNote(row: NotServed, path: string): string {
  if (row.kind === 'no-effect') return `accepted, but has no effect in this release: ${row.consequence}`;
  return row.setting === path ? row.when : row.coversWhy;
}

function notServedParagraph(): string {
  const noEffect = NOT_SERVED.filter((row) => row.kind === 'no-effect').map((row) => `\`${row.setting}\` (${row.consequence})`);
  const refused = NOT_SERVED.flatMap((row) => (row.kind === 'refused' ? [`\`${row.setting}\`: ${row.when}`] : []));
  return (
    '**Not served yet.** This release does not act on every setting below; those it does not are marked *Not served yet*. ' +
    `These are validated and have no effect: ${noEffect.join('; ')}. ` +
    'For each of them that the file or an override writes, startup logs one warning (`config.warning`, code `not-served`, naming the setting) and `check-config` prints the same one; neither ever reports it as on. ' +
    `These values are refused, by startup and by \`check-config\` alike: ${refused.join('; ')}. ` +
    'The release that serves a setting removes its mark.\n'
  );
}

/** The not-served row a docs path is marked with: the row's own setting, or one it covers. */
function markOf(path: string): NotServed | undefined {
  return NOT_SERVED.find((row) => row.setting === path || (row.kind === 'refused' && row.covers.includes(path)));
}

export function renderConfigurationDocs(): string {
  const parts = [INTRO, notServedParagraph()];
  for (const [section, schema] of Object.entries(ConfigSchema.shape)) {
    const rows: Row[] = [];
    walk(schema, [section], rows);
    const [head, ...keys] = rows;
    parts.push(`## ${section}\n`);
    if (head !== undefined) {
      const shape = head.type === 'object' ? '' : ` A ${head.type}, default ${head.default}.`;
      const mark = markOf(section);
      parts.push(`${head.meaning}.${shape}${mark === undefined ? '' : ` **Not served yet:** ${notServedNote(mark, section)}.`}\n`);
    }
    for (const row of keys) {
      const mark = markOf(row.path);
      if (mark !== undefined) row.meaning = `**Not served yet** (${notServedNote(mark, row.path)}). ${row.meaning}`;
    }
    parts.push('| Setting | Type | Default | Range | Meaning |\n|---|---|---|---|---|');
    parts.push(
      `${keys.map((row) => `| \`${row.path}\` | ${cell(row.type)} | ${cell(row.default)} | ${cell(row.range)} | ${cell(row.meaning)} |`).join('\n')}\n`,
    );
  }
  return parts.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(renderConfigurationDocs());
}
