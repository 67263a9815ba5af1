/**
 * The rules of the tree's shape (docs/architecture.md) as pure functions of
 * an import graph (import-graph.ts), so that layers.test.ts applies them to
 * the real tree and rules.test.ts to small graphs that break each one: a
 * rule that stopped reporting would fail there, not pass in silence.
 *
 * Every rule returns findings: a `key` (what a list of known exceptions
 * names) and a `message` (what a failure prints: file:line → target and the
 * rule it breaks).
 */
import ts from 'typescript';
import type { Edge } from './import-graph.ts';

export const LAYERS = ['bin', 'service', 'http', 'cli', 'actors', 'runtime', 'config'] as const;
export type Layer = (typeof LAYERS)[number];

/** What each layer may import besides itself. */
export const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  bin: ['service', 'cli', 'http', 'actors', 'runtime', 'config'],
  service: ['http', 'cli', 'actors', 'runtime', 'config'],
  http: ['actors', 'runtime', 'config'],
  cli: ['actors', 'runtime', 'config'],
  actors: ['runtime', 'config'],
  config: ['runtime'],
  runtime: [],
};

export type Finding = { key: string; message: string };

export const where = (e: Edge): string => `${e.from}:${e.line} → ${e.to}`;
const edgeKey = (e: Edge): string => `${e.from} → ${e.to}`;
export const layerOf = (path: string): string => path.split('/')[0]!;
const isLayer = (folder: string): folder is Layer => (LAYERS as readonly string[]).includes(folder);
export const actorOf = (path: string): string | null => (path.startsWith('actors/') ? path.split('/')[1]! : null);
/** Data files (`.md`, `.json`) read by path are no modules. */
const isModule = (e: Edge): boolean => !e.external && !e.to.endsWith('.md') && !e.to.endsWith('.json');

/** What other folders import of an actor: its `protocol.ts`, or a consumer contract of its `protocol/` folder. */
export const isActorPublic = (path: string): boolean => /^actors\/[^/]+\/(protocol\.ts|protocol\/[^/]+\.ts)$/.test(path);

/**
 * Modules that are contracts, not handler code, though their names do not
 * say so. Each must exist (layers.test.ts checks), so the list stays true.
 */
export const CONTRACTS_BY_NAME: Record<string, string> = {};

/**
 * A contract module: an actor's protocol and the schema-only modules it is
 * made of. By name: `protocol.ts`, `protocol-*.ts`, `*-messages.ts`,
 * `*-contract.ts`, anything under an actor's `protocol/` or `contracts/`
 * folder, and CONTRACTS_BY_NAME.
 */
export function isContract(path: string): boolean {
  if (path in CONTRACTS_BY_NAME) return true;
  const m = /^actors\/[^/]+\/(.+)$/.exec(path);
  if (m === null) return false;
  const inside = m[1]!;
  return /^(protocol|contracts)\//.test(inside) || (!inside.includes('/') && /^(protocol(-[^/]+)?|[^/]+-messages|[^/]+-contract)\.ts$/.test(inside));
}

/** Layers: a module imports its own layer or one MAY_IMPORT allows; http and cli never each other. */
export function layerBreaks(edges: readonly Edge[]): Finding[] {
  return edges
    .filter((e) => isModule(e) && isLayer(layerOf(e.from)))
    .flatMap((e) => {
      const [from, to] = [layerOf(e.from) as Layer, layerOf(e.to)];
      if (from === to || (isLayer(to) && MAY_IMPORT[from].includes(to))) return [];
      return [{ key: edgeKey(e), message: `${where(e)}: ${from}/ may import only ${[from, ...MAY_IMPORT[from]].join(', ')}` }];
    });
}

/** Outside an actor's folder only its protocol.ts is imported or named by URL (type imports included: they bind to its internals too). */
export function reachIns(edges: readonly Edge[]): Finding[] {
  return edges
    .filter((e) => isModule(e) && actorOf(e.to) !== null && actorOf(e.to) !== actorOf(e.from) && layerOf(e.from) !== 'bench')
    .filter((e) => !isActorPublic(e.to))
    .map((e) => ({ key: edgeKey(e), message: `${where(e)}: outside actors/${actorOf(e.to)}/ import only its protocol.ts` }));
}

/** Source never imports test/ or bench/ (they do not ship). */
export function sourceImportsTestOrBench(edges: readonly Edge[]): Finding[] {
  return edges
    .filter((e) => isModule(e) && isLayer(layerOf(e.from)) && ['test', 'bench'].includes(layerOf(e.to)))
    .map((e) => ({ key: edgeKey(e), message: `${where(e)}: source never imports test/ or bench/` }));
}

/** Packages a protocol may load: schemas and Node's own modules. */
const PROTOCOL_PACKAGES = /^(zod|node:.*)$/;

/**
 * Protocols are leaves. What loading a protocol loads (static imports the
 * compiler keeps, `import()`, `require()`; `import type` is erased, while
 * under verbatimModuleSyntax `import { type X }` still loads) holds no
 * package but zod and `node:` modules, and of actors/ only contract
 * modules: never handler code, whose own packages may come later.
 */
export function leafBreaks(files: readonly string[], edges: readonly Edge[]): Finding[] {
  const loads = new Map<string, Edge[]>();
  for (const e of edges) if (!e.typeOnly && !e.byUrl) loads.set(e.from, [...(loads.get(e.from) ?? []), e]);
  const findings: Finding[] = [];
  for (const protocol of files.filter(isActorPublic)) {
    // Breadth first, so each finding shows the shortest path that reached it.
    const seen = new Set<string>([protocol]);
    const queue: Array<{ file: string; path: string[] }> = [{ file: protocol, path: [protocol] }];
    while (queue.length > 0) {
      const { file, path } = queue.shift()!;
      for (const e of loads.get(file) ?? []) {
        const via = `${path.join(' → ')} → ${e.to} (${where(e)})`;
        if (e.external) {
          if (!PROTOCOL_PACKAGES.test(e.to)) findings.push({ key: `${protocol} → ${e.to}`, message: `${via}: a protocol loads only zod and node: modules` });
        } else if (!seen.has(e.to)) {
          seen.add(e.to);
          if (actorOf(e.to) !== null && !isContract(e.to))
            findings.push({ key: `${protocol} → ${e.to}`, message: `${via}: a protocol loads no handler code (only contract modules of actors/)` });
          queue.push({ file: e.to, path: [...path, e.to] });
        }
      }
    }
  }
  return findings;
}

/** Strongly connected components of `edges` (Tarjan), each with more than one module. */
function cycles(nodes: readonly string[], edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return found;
}

/** The shortest way from `start` round to it inside `component`, each step an import. */
function roundTrip(start: string, component: ReadonlySet<string>, edges: readonly Edge[]): Edge[] {
  const inside = edges.filter((e) => component.has(e.from) && component.has(e.to));
  const via = new Map<string, Edge>(); // the import by which each module was first reached
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const e of inside.filter((x) => x.from === file)) {
      if (e.to === start) {
        const steps = [e];
        for (let at = file; at !== start; at = via.get(at)!.from) steps.unshift(via.get(at)!);
        return steps;
      }
      if (!via.has(e.to)) {
        via.set(e.to, e);
        queue.push(e.to);
      }
    }
  }
  return [];
}

/**
 * No cycle between contract modules. Their imports form a tree of
 * dependencies, so a consumer can take one contract without the others; a
 * cycle (type imports count: they bind the contracts together as much,
 * and a loaded one can meet a binding before it is initialised) is reported
 * once, keyed by its contract modules joined with ↔.
 */
export function contractCycles(edges: readonly Edge[]): Finding[] {
  // The whole of actors/, so a cycle that passes through a handler module between two contracts is seen too.
  const inActors = edges.filter((e) => isModule(e) && !e.byUrl && actorOf(e.from) !== null && actorOf(e.to) !== null);
  const nodes = [...new Set(inActors.flatMap((e) => [e.from, e.to]))].sort();
  return cycles(nodes, inActors).flatMap((component) => {
    const contracts = component.filter(isContract);
    if (contracts.length < 2) return [];
    const steps = roundTrip(contracts[0]!, new Set(component), inActors).map((e) => `${where(e)}${e.typeOnly ? ' (type)' : ''}`);
    return [{ key: contracts.join(' ↔ '), message: `${steps.join(', ')}: contract modules import each other` }];
  });
}

/**
 * What bench/ may import: itself; the shared test helpers (test/helpers/,
 * test/harness/: the peers, the corpus, ports) except
 * test/helpers/daemon.ts, which starts the daemon from its sources; the
 * kernel and the configuration (runtime/, config/: libraries every layer
 * builds on); and an actor's protocol.ts. Not an actor's internals, other
 * test files, http/, cli/, service/ or bin/: the compiled daemon is started
 * as a process by bench/peers/daemon.ts (see BENCH_DAEMON_STARTER) and
 * reached through its listeners.
 */
export function benchAllows(to: string): boolean {
  if (to === 'test/helpers/daemon.ts') return false;
  return /^(bench|test\/helpers|test\/harness|runtime|config)\//.test(to) || isActorPublic(to);
}

export function benchBreaks(edges: readonly Edge[]): Finding[] {
  return edges
    .filter((e) => isModule(e) && layerOf(e.from) === 'bench' && !benchAllows(e.to))
    .map((e) => ({
      key: edgeKey(e),
      message: `${where(e)}: bench/ imports bench/, test/helpers/ (not daemon.ts), test/harness/, runtime/, config/ and actors' protocol.ts only`,
    }));
}

/** The one bench module that names the daemon's binary: every bench daemon starts there, alike. */
export const BENCH_DAEMON_STARTER = 'bench/peers/daemon.ts';

/** Bench modules whose code (not comments) names `bin/mailcairnd` in a string: each starts a daemon of its own. */
export function daemonStarters(sources: ReadonlyArray<{ file: string; text: string }>): string[] {
  const naming = (node: ts.Node): boolean =>
    ((ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) &&
      /bin\/mailcairnd\b/.test(node.text)) ||
    ts.forEachChild(node, naming) === true;
  return sources
    .filter(({ file }) => layerOf(file) === 'bench')
    .filter(({ file, text }) => naming(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)))
    .map(({ file }) => file);
}

/**
 * Floors under what the reader must find in the real tree, about three
 * quarters of what it held when they were set: a reader that silently
 * finds less (a renamed folder, a parser that stopped seeing imports)
 * fails here instead of every rule passing on an empty graph, while a tree
 * that shrinks a little does not.
 */
export const FLOORS = { modules: 250, edges: 900, benchModules: 28, benchEdges: 160, protocols: 7, typeOnly: 270, byUrl: 14 } as const;

/** What is too thin in a graph read from `files`: empty when it looks like the whole tree. */
export function thinGraph(files: readonly string[], edges: readonly Edge[]): string[] {
  const inTree = edges.filter(isModule);
  const source = (path: string): boolean => isLayer(layerOf(path));
  const counts: Array<[string, number, number]> = [
    ['source modules', files.filter(source).length, FLOORS.modules],
    ['imports between source modules', inTree.filter((e) => source(e.from)).length, FLOORS.edges],
    ['bench modules', files.filter((f) => layerOf(f) === 'bench').length, FLOORS.benchModules],
    ['bench imports of the tree', inTree.filter((e) => layerOf(e.from) === 'bench').length, FLOORS.benchEdges],
    ['protocols', files.filter(isActorPublic).length, FLOORS.protocols],
    // Both kinds the leaf rule tells apart must still be seen, or it judges every import alike.
    ['erased (type-only) imports', edges.filter((e) => e.typeOnly).length, FLOORS.typeOnly],
    ['modules named by URL', edges.filter((e) => e.byUrl).length, FLOORS.byUrl],
  ];
  const thin = counts.filter(([, n, floor]) => n < floor).map(([what, n, floor]) => `${what}: ${n}, fewer than ${floor}`);
  for (const layer of [...LAYERS, 'bench']) {
    if (!inTree.some((e) => layerOf(e.from) === layer)) thin.push(`${layer}/: no import of the tree read`);
  }
  return thin;
}

/**
 * Keeps what no list names and says which listed keys nothing reported: a
 * list of exceptions only shrinks (a listed one that is gone fails too).
 */
export function against(findings: readonly Finding[], known: Readonly<Record<string, string>>): { broken: string[]; gone: string[] } {
  return {
    broken: findings.filter((f) => !(f.key in known)).map((f) => f.message),
    gone: Object.keys(known).filter((key) => !findings.some((f) => f.key === key)),
  };
}
