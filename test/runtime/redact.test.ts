/**
 * Every setting that holds a secret reference is censored by name in logs,
 * so a configuration logged by mistake leaks no reference target.
 */
import t from 'tap';
import type { z } from 'zod';
import { redactedKeys } from '../../runtime/redact.ts';
import { ConfigSchema } from '../../config/schema.ts';
import { elementOf, shapeOf, unwrap } from '../../config/schema-walk.ts';

t.test('names are lower case and unique', (t) => {
  t.same(
    redactedKeys.filter((k) => k !== k.toLowerCase()),
    [],
  );
  t.equal(new Set(redactedKeys).size, redactedKeys.length);
  t.end();
});

t.test('every secret-reference setting name is redacted', (t) => {
  const names = new Set<string>();
  const visit = (schema: z.core.$ZodType, key: string): void => {
    const layer = unwrap(schema);
    if (layer.meta.type === 'secret reference') names.add(key);
    const shape = shapeOf(layer.core);
    if (shape !== null) for (const [k, child] of Object.entries(shape)) visit(child, k);
    const element = elementOf(layer.core);
    if (element !== null) visit(element, key);
  };
  visit(ConfigSchema, '');
  t.ok(names.size >= 6, [...names].join(', '));
  for (const name of names) t.ok(redactedKeys.includes(name.toLowerCase()), `${name} is redacted`);
  t.end();
});
