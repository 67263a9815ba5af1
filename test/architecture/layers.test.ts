/**
 * The shape of the tree (docs/architecture.md), read from the import graph:
 *
 * - layers: bin → service → http | cli → actors → runtime, with config
 *   beside runtime (config may use runtime; runtime uses neither config nor
 *   anything above it). A module imports its own layer or one below, never
 *   one above, and http and cli never import each other. Source never
 *   imports test/ or bench/.
 * - actors: outside an actor's folder only its `protocol.ts` is imported or
 *   named by URL (its entry modules are published there as URLs), or, for
 *   an actor whose contract is split by consumer, a module of its
 *   `protocol/` folder.
 * - protocols are leaves: loading an actor's `protocol.ts` (or a
 *   `protocol/` module) loads no package but zod and Node's own, so
 *   importing a protocol never loads handler code (a MIME library, the
 *   database driver) on the thread that imports it.
 *
 * A failure names the import (file:line → target) and the rule it breaks.
 */
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { edgesOf, sourceFiles, type Edge } from './import-graph.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const LAYERS = ['bin', 'service', 'http', 'cli', 'actors', 'runtime', 'config'] as const;
type Layer = (typeof LAYERS)[number];

/** What each layer may import besides itself. */
const MAY_IMPORT: Record<Layer, readonly string[]> = {
  bin: ['service', 'cli', 'http', 'actors', 'runtime', 'config'],
  service: ['http', 'cli', 'actors', 'runtime', 'config'],
  http: ['actors', 'runtime', 'config'],
  cli: ['actors', 'runtime', 'config'],
  actors: ['runtime', 'config'],
  config: ['runtime'],
  runtime: [],
};
/** Packages a protocol may load: schemas and Node's own modules. */
const PROTOCOL_PACKAGES = /^(zod|node:.*)$/;

const files = sourceFiles(root, LAYERS);
const edges = files.flatMap((file) => edgesOf(root, file));
const where = (e: Edge): string => `${e.from}:${e.line} → ${e.to}`;
const layerOf = (path: string): string => path.split('/')[0]!;
const actorOf = (path: string): string | null => (path.startsWith('actors/') ? path.split('/')[1]! : null);
/** An actor's public surface: its `protocol.ts`, or a contract of its `protocol/` folder. */
const isProtocol = (path: string): boolean => /^actors\/[^/]+\/(protocol\.ts|protocol\/[^/]+\.ts)$/.test(path);

t.ok(files.length > 100, `read the tree (${files.length} modules)`);

t.test('no module imports a layer above its own', async (t) => {
  const broken = edges
    .filter((e) => !e.external && !e.to.endsWith('.md') && !e.to.endsWith('.json'))
    .filter((e) => {
      const [from, to] = [layerOf(e.from) as Layer, layerOf(e.to)];
      return from !== to && !MAY_IMPORT[from].includes(to);
    })
    .map((e) => `${where(e)}: ${layerOf(e.from)}/ may import only ${[layerOf(e.from), ...MAY_IMPORT[layerOf(e.from) as Layer]].join(', ')}`);
  t.same(broken, [], 'every import stays in its layer or goes down');
});

/**
 * Reach-ins still to be removed, each with its reason. The test fails when a
 * new one appears and when a listed one is gone (so the list only shrinks).
 */
const KNOWN_REACH_INS: Record<string, string> = {};

t.test("no module reaches into another actor's internals", async (t) => {
  const reaching = edges.filter((e) => !e.external && actorOf(e.to) !== null && actorOf(e.to) !== actorOf(e.from)).filter((e) => !isProtocol(e.to));
  const broken = reaching
    .filter((e) => !(`${e.from} → ${e.to}` in KNOWN_REACH_INS))
    .map((e) => `${where(e)}: outside actors/${actorOf(e.to)}/ import only its protocol.ts`);
  t.same(broken, [], "other folders use an actor's protocol.ts only");
  const gone = Object.keys(KNOWN_REACH_INS).filter((known) => !reaching.some((e) => `${e.from} → ${e.to}` === known));
  t.same(gone, [], 'every listed reach-in still exists (remove it from the list once fixed)');
});

t.test('every protocol.ts is a leaf', async (t) => {
  const loads = new Map<string, Edge[]>();
  for (const e of edges) if (!e.typeOnly && !e.byUrl) loads.set(e.from, [...(loads.get(e.from) ?? []), e]);
  const protocols = files.filter(isProtocol);
  t.ok(protocols.length >= 6, 'found the protocols');
  for (const protocol of protocols) {
    // Walk what loading the protocol loads; report each package beyond zod with the path that reached it.
    const seen = new Set<string>([protocol]);
    const queue: Array<{ file: string; path: string[] }> = [{ file: protocol, path: [protocol] }];
    const broken: string[] = [];
    while (queue.length > 0) {
      const { file, path } = queue.shift()!;
      for (const e of loads.get(file) ?? []) {
        if (e.external) {
          if (!PROTOCOL_PACKAGES.test(e.to)) broken.push(`${[...path].join(' → ')} → ${e.to} (${where(e)})`);
        } else if (!seen.has(e.to)) {
          seen.add(e.to);
          queue.push({ file: e.to, path: [...path, e.to] });
        }
      }
    }
    t.same(broken, [], `${protocol} loads only zod and node: modules`);
  }
});

t.test('source never imports tests or benchmarks', async (t) => {
  const broken = edges.filter((e) => !e.external && ['test', 'bench'].includes(layerOf(e.to))).map(where);
  t.same(broken, []);
});
