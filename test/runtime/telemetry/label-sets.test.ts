/**
 * Label sets made once per combination of values (runtime/telemetry/label-sets.ts):
 * the same values give the same frozen set, and values that differ anywhere
 * (a missing route, another status) give their own.
 */
import t from 'tap';
import { LabelSets } from '../../../runtime/telemetry/label-sets.ts';

t.test('one frozen set per combination of values', (t) => {
  let made = 0;
  const sets = new LabelSets<readonly [string, string | null, number | undefined]>(([method, route, status]) => {
    made += 1;
    return { method, ...(route !== null ? { route } : {}), ...(status !== undefined ? { status } : {}) };
  });
  const first = sets.of(['GET', '/mcp', 200]);
  t.equal(sets.of(['GET', '/mcp', 200]), first, 'the same object for the same values');
  t.ok(Object.isFrozen(first));
  t.same(first, { method: 'GET', route: '/mcp', status: 200 });
  t.same(sets.of(['GET', null, 200]), { method: 'GET', status: 200 }, 'no route');
  t.same(sets.of(['GET', '/mcp', undefined]), { method: 'GET', route: '/mcp' }, 'no status');
  t.not(sets.of(['GET', '/mcp', 404]), first, 'another status, another set');
  t.equal(made, 4);
  t.end();
});
