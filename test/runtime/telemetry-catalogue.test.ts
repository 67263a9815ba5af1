/**
 * The metric catalogue (runtime/telemetry/catalogue.ts) is the one place
 * instruments come from:
 * - docs/operations.md carries its current table (`npm run docs:metrics`);
 * - names are unique and labels come from the documented vocabulary, none
 *   of which can hold mail content;
 * - no module outside runtime/telemetry makes a meter, an instrument or a
 *   tracer: one made at import from the API's no-op provider records
 *   nothing forever (the refusal counter once did).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { METRICS } from '../../runtime/telemetry/catalogue.ts';
import { withCurrentMetricTable } from '../../runtime/telemetry/metrics-doc.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

t.test('docs/operations.md carries the current metric table (npm run docs:metrics rewrites it)', async (t) => {
  const doc = readFileSync(join(root, 'docs/operations.md'), 'utf8');
  t.equal(doc, withCurrentMetricTable(doc));
});

t.test('metric names are unique and every label is one of the documented, content-free ones', async (t) => {
  const names = Object.values(METRICS).map((d) => d.name);
  t.same([...new Set(names)].length, names.length, 'no name twice');
  // Each holds an identifier the operator configured, a template, a tool or permission name, or a code.
  const vocabulary = new Set([
    'mailcairn.surface',
    'http.request.method',
    'http.route',
    'http.response.status_code',
    'mcp.method.name',
    'gen_ai.tool.name',
    'mailcairn.outcome',
    'error.type',
    'surface',
    'target',
    'permission',
    'policy',
    'result',
    'mailcairn.actor',
    'mailcairn.reason',
    'mailcairn.account',
    'mailcairn.folder',
    'mailcairn.state',
    'mailcairn.stage',
  ]);
  for (const def of Object.values(METRICS)) {
    for (const label of def.labels) t.ok(vocabulary.has(label), `${def.name}: label ${label} is in the vocabulary`);
  }
});

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

t.test('meters, instruments and tracers are made in runtime/telemetry only', async (t) => {
  const made = /\.(getMeter|getTracer|createCounter|createUpDownCounter|createHistogram|createGauge|createObservable\w*)\(/;
  const offenders = ['bin', 'service', 'runtime', 'actors', 'http', 'cli', 'config']
    .flatMap((dir) => sources(join(root, dir)))
    .map((path) => relative(root, path))
    .filter((path) => !path.startsWith('runtime/telemetry/'))
    .filter((path) => made.test(readFileSync(join(root, path), 'utf8')));
  t.same(offenders, [], 'every instrument is looked up through runtime/telemetry/instruments.ts at use');
});
