/**
 * `docs/configuration.md` is generated from the schemas; this keeps the
 * committed page equal to what the schemas say today, and checks that every
 * setting appears in it.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { z } from 'zod';
import { renderConfigurationDocs } from '../../config/docs.ts';
import { ConfigSchema } from '../../config/schema.ts';
import { elementOf, shapeOf, unwrap } from '../../config/schema-walk.ts';

t.test('docs/configuration.md is up to date (regenerate with npm run docs:config)', (t) => {
  const committed = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  t.equal(committed, renderConfigurationDocs());
  t.end();
});

t.test('every setting has a row with a meaning', (t) => {
  const page = renderConfigurationDocs();
  const paths: string[] = [];
  const visit = (schema: z.core.$ZodType, path: string[]): void => {
    const layer = unwrap(schema);
    if (path.length > 1) paths.push(path.join(':'));
    const shape = shapeOf(layer.core);
    if (shape !== null) for (const [key, child] of Object.entries(shape)) visit(child, [...path, key]);
    const element = elementOf(layer.core);
    const inner = element === null ? null : shapeOf(unwrap(element).core);
    if (inner !== null) for (const [key, child] of Object.entries(inner)) visit(child, [...path, '[]', key]);
  };
  for (const [section, schema] of Object.entries(ConfigSchema.shape)) visit(schema, [section]);
  t.ok(paths.length > 200, `${paths.length} settings`);
  for (const path of paths) {
    const row = page.split('\n').find((line) => line.startsWith(`| \`${path}\` |`));
    t.ok(row !== undefined && !row.endsWith('|  |'), `${path} is documented`);
  }
  t.end();
});
