/**
 * Walks the whole schema so that every setting is covered without a list to
 * keep in step: an unknown key at every object depth (section, nested object,
 * list element) is refused by name, and every numeric and time-span range is
 * checked at both boundaries, just inside and just outside.
 */
import t from 'tap';
import type { z } from 'zod';
import { ConfigSchema } from '../../config/schema.ts';
import { elementOf, shapeOf, unwrap } from '../../config/schema-walk.ts';
import { formatTimeSpan, parseTimeSpan } from '../../config/schema/time-span.ts';
import { problemLines, richConfig, setAt } from './fixtures.ts';

type Leaf = { path: string; layer: ReturnType<typeof unwrap> };

function collect(schema: z.core.$ZodType, path: string[], objects: string[], leaves: Leaf[]): void {
  const layer = unwrap(schema);
  const shape = shapeOf(layer.core);
  if (shape !== null) {
    objects.push(path.join(':'));
    for (const [key, child] of Object.entries(shape)) collect(child, [...path, key], objects, leaves);
    return;
  }
  const element = elementOf(layer.core);
  if (element !== null && shapeOf(unwrap(element).core) !== null) {
    collect(element, [...path, '0'], objects, leaves);
    return;
  }
  leaves.push({ path: path.join(':'), layer });
}

const objects: string[] = [];
const leaves: Leaf[] = [];
collect(ConfigSchema, [], objects, leaves);

t.test('an unknown key at every object depth is refused by name', (t) => {
  t.ok(objects.length > 60, `walked ${objects.length} objects`);
  for (const path of objects) {
    const tree = richConfig();
    const setting = path === '' ? 'Bogus' : `${path}:Bogus`;
    setAt(tree, setting, 1);
    const lines = problemLines(tree);
    const expected = path === '' ? 'Bogus: unknown section' : `${setting}: unknown setting`;
    t.ok(lines.includes(expected), `${setting} is named`, { lines });
  }
  t.end();
});

t.test('the rich fixture itself is accepted', (t) => {
  t.same(problemLines(richConfig()), []);
  t.end();
});

type Bound = { path: string; inside: [unknown, unknown]; outside: unknown[]; min: string; max: string };

function bounds(leaf: Leaf): Bound | null {
  const range = leaf.layer.meta.range;
  if (typeof range !== 'string') return null;
  const m = /^(\S+) to (\S+)/.exec(range);
  if (m === null) return null;
  const [, min = '', max = ''] = m;
  if (leaf.layer.meta.type === 'time span') {
    const lo = parseTimeSpan(min);
    const hi = parseTimeSpan(max);
    if (lo === null || hi === null) return null;
    const outside = [formatTimeSpan(hi + 1)];
    if (lo > 0) outside.push(formatTimeSpan(lo - 1));
    return { path: leaf.path, inside: [min, max], outside, min, max };
  }
  if (!/^\d+(\.\d+)?$/.test(min) || !/^\d+(\.\d+)?$/.test(max)) return null;
  const step = min.includes('.') || Number(max) <= 1 ? 0.01 : 1;
  return { path: leaf.path, inside: [Number(min), Number(max)], outside: [Number(min) - step, Number(max) + step], min, max };
}

// Relations between keys: while probing one key, its partner is moved out of the way.
const companions: Record<string, [string, unknown]> = {
  'MailSynchronization:Backoff:Maximum': ['MailSynchronization:Backoff:Initial', '00:00:01'],
  'MailSynchronization:Backoff:Initial': ['MailSynchronization:Backoff:Maximum', '1.00:00:00'],
  'Spam:Engine:RetryDelayMaximum': ['Spam:Engine:RetryDelay', '00:00:01'],
  'Spam:Engine:RetryDelay': ['Spam:Engine:RetryDelayMaximum', '1.00:00:00'],
  // The local model's threads are a key of Provider Local only.
  'Embeddings:LocalThreads': ['Embeddings:Provider', 'Local'],
};

t.test('every range: just inside is accepted, just outside is refused naming the setting and the range', (t) => {
  const probes = leaves.map(bounds).filter((b): b is Bound => b !== null);
  t.ok(probes.length > 45, `found ${probes.length} ranged settings`);
  for (const probe of probes) {
    for (const value of probe.inside) {
      const tree = setAt(richConfig(), probe.path, value);
      const partner = companions[probe.path];
      if (partner !== undefined) setAt(tree, partner[0], partner[1]);
      const named = problemLines(tree).filter((line) => line.startsWith(`${probe.path}:`));
      t.same(named, [], `${probe.path} = ${String(value)} is accepted`);
    }
    for (const value of probe.outside) {
      const lines = problemLines(setAt(richConfig(), probe.path, value));
      const line = lines.find((l) => l.startsWith(`${probe.path}: `));
      t.ok(line?.includes(`between ${probe.min} and ${probe.max}`), `${probe.path} = ${String(value)} is refused with its range`, { lines });
      t.ok(line?.includes(`(was ${String(value)})`), `${probe.path} names the value written`, { line });
    }
  }
  t.end();
});
