/**
 * Generates `docs/configuration.md` from the schemas: per section, a table
 * of every key path with its type, default, range and meaning, read from
 * the metadata `config/schema/fields.ts` attaches. Because the page is
 * generated, it cannot drift; `test/config/docs.test.ts` regenerates it and
 * compares. Run: `npm run docs:config`.
 */
import { pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { INTRO } from './docs-intro.ts';
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

export function renderConfigurationDocs(): string {
  const parts = [INTRO];
  for (const [section, schema] of Object.entries(ConfigSchema.shape)) {
    const rows: Row[] = [];
    walk(schema, [section], rows);
    const [head, ...keys] = rows;
    parts.push(`## ${section}\n`);
    if (head !== undefined) {
      const shape = head.type === 'object' ? '' : ` A ${head.type}, default ${head.default}.`;
      parts.push(`${head.meaning}.${shape}\n`);
    }
    parts.push('| Setting | Type | Default | Range | Meaning |\n|---|---|---|---|---|');
    parts.push(keys.map((row) => `| \`${row.path}\` | ${cell(row.type)} | ${cell(row.default)} | ${cell(row.range)} | ${cell(row.meaning)} |`).join('\n') + '\n');
  }
  return parts.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(renderConfigurationDocs());
}
