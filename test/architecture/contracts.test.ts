/**
 * Contracts stay shapes (docs/architecture.md), read from the import graph:
 *
 * - no protocol module is on an import cycle, counting type-only imports:
 *   one protocol may build on another's shapes, never the reverse as well;
 * - the query pool's consumer contracts (`actors/mail-query/protocol/`)
 *   load shapes only: no store module that runs statements, no
 *   configuration schema and no other actor's protocol, so a consumer that
 *   imports one loads nothing it does not ask.
 *
 * A failure names the path that breaks the rule.
 */
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { edgesOf, sourceFiles, type Edge } from './import-graph.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const files = sourceFiles(root, ['bin', 'service', 'http', 'cli', 'actors', 'runtime', 'config']);
const edges = files.flatMap((file) => edgesOf(root, file));
const isProtocol = (path: string): boolean => /^actors\/[^/]+\/(protocol\.ts|protocol\/[^/]+\.ts)$/.test(path);

function graph(keep: (e: Edge) => boolean): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of edges) if (!e.external && !e.byUrl && keep(e)) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  return out;
}

/** Every module `start` reaches, each with the path that first reached it. */
function reach(next: Map<string, string[]>, start: string): Map<string, string[]> {
  const paths = new Map<string, string[]>();
  const queue: string[][] = [[start]];
  while (queue.length > 0) {
    const path = queue.shift()!;
    for (const to of next.get(path.at(-1)!) ?? []) {
      if (paths.has(to)) continue;
      paths.set(to, [...path, to]);
      queue.push([...path, to]);
    }
  }
  return paths;
}

t.test('no protocol is on an import cycle', async (t) => {
  const all = graph(() => true);
  const broken = files
    .filter(isProtocol)
    .map((p) => reach(all, p).get(p))
    .filter((cycle) => cycle !== undefined)
    .map((cycle) => cycle.join(' → '));
  t.same(broken, [], 'protocols import in one direction only');
});

/** Modules that hold statements or the driver: what a contract must not load. */
const STATEMENTS = new Set(['runtime/store/rows.ts', 'runtime/store/open.ts', 'runtime/store/mailbox/prepared.ts']);

t.test("the query pool's consumer contracts load shapes only", async (t) => {
  const loads = graph((e) => !e.typeOnly);
  const contracts = files.filter((f) => f.startsWith('actors/mail-query/protocol/'));
  t.ok(contracts.length >= 6, 'found the contracts');
  for (const contract of contracts) {
    const broken = [...reach(loads, contract)]
      .filter(([to]) => STATEMENTS.has(to) || to.startsWith('config/') || (to.startsWith('actors/') && !to.startsWith('actors/mail-query/protocol/')))
      .map(([, path]) => path.join(' → '));
    t.same(broken, [], `${contract} loads no statements, configuration or other protocol`);
  }
});
