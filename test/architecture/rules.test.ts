/**
 * Each rule of rules.ts reports a small tree that breaks it. The trees are
 * temporary files read by the same reader as the real tree
 * (import-graph.ts), so a rule that stopped reporting, or a reader that
 * stopped seeing an import, fails here rather than passing in silence.
 */
import t, { type Test } from 'tap';
import { type Edge, edgesOf, sourceFiles } from './import-graph.ts';
import * as rules from './rules.ts';

type Fixture = { [name: string]: string | Fixture };

/** Writes `tree` (path → source) to a temporary directory and reads its import graph. */
function graphOf(t: Test, tree: Record<string, string>): { files: string[]; edges: Edge[] } {
  const fixture: Fixture = {};
  for (const [path, text] of Object.entries(tree)) {
    const parts = path.split('/');
    let folder = fixture;
    for (const part of parts.slice(0, -1)) {
      folder[part] ??= {};
      folder = folder[part] as Fixture;
    }
    folder[parts.at(-1)!] = text;
  }
  const dir = t.testdir(fixture);
  const files = sourceFiles(dir, [...rules.LAYERS, 'bench']);
  return { files, edges: files.flatMap((file) => edgesOf(dir, file)) };
}

/** A module's source, one argument a line. */
const src = (...lines: string[]): string => [...lines, ''].join('\n');
const keys = (findings: rules.Finding[]): string[] => findings.map((f) => f.key).sort();

t.test('an empty or partly read graph is too thin', async (t) => {
  const thin = rules.thinGraph([], []);
  t.ok(thin.length >= 7, 'every count is under its floor');
  t.match(thin.join('\n'), /source modules: 0/);
  t.match(thin.join('\n'), /bench\/: no import of the tree read/);
  // One layer read with plenty of imports still misses the others.
  const { files, edges } = graphOf(t, { 'runtime/a.ts': "import './b.ts';\n", 'runtime/b.ts': '' });
  t.match(rules.thinGraph(files, edges).join('\n'), /http\/: no import of the tree read/);
});

t.test('layers: an import upwards, or between http and cli, is reported', async (t) => {
  const { edges } = graphOf(t, {
    'runtime/clock.ts': "import { route } from '../http/route.ts';\nexport const now = route;\n",
    'http/route.ts': "import { main } from '../cli/main.ts';\nimport { now } from '../runtime/clock.ts';\nexport const route = [main, now];\n",
    'actors/a/actor.ts': "import { now } from '../../runtime/clock.ts';\nexport default now;\n",
  });
  t.same(keys(rules.layerBreaks(edges)), ['http/route.ts → cli/main.ts', 'runtime/clock.ts → http/route.ts']);
});

t.test('source importing test/ or bench/ is reported', async (t) => {
  const { edges } = graphOf(t, { 'service/app.ts': "import { reservePort } from '../test/helpers/ports.ts';\nexport { reservePort };\n" });
  t.same(keys(rules.sourceImportsTestOrBench(edges)), ['service/app.ts → test/helpers/ports.ts']);
});

t.test("reaching into another actor's module, by import or by URL, is reported", async (t) => {
  const { edges } = graphOf(t, {
    'http/tool.ts': `import { search } from '../actors/query/search.ts';
import { Request } from '../actors/query/protocol.ts';
const entry = moduleUrl('../actors/query/task.ts', import.meta.url);
export { search, Request, entry };
`,
  });
  t.same(keys(rules.reachIns(edges)), ['http/tool.ts → actors/query/search.ts', 'http/tool.ts → actors/query/task.ts']);
});

t.test('a protocol that loads a package or handler code is reported, a type import kept by verbatimModuleSyntax included', async (t) => {
  const { files, edges } = graphOf(t, {
    'actors/a/protocol.ts': src(
      "import { z } from 'zod';",
      "import type { Erased } from 'erased';",
      "import { type Database } from 'libsql';", // kept: emitted as `import {} from 'libsql'`
      "import { Shape } from './shape-messages.ts';",
      "import { handle } from './actor.ts';",
      'export { z, Shape, handle };',
      'export type { Erased, Database };',
    ),
    'actors/a/shape-messages.ts': "import { parse } from 'mailparser';\nexport const Shape = parse;\n",
    'actors/a/actor.ts': 'export const handle = 1;\n',
    'actors/b/protocol.ts': "export { type Row } from 'libsql';\n",
  });
  t.same(keys(rules.leafBreaks(files, edges)), [
    'actors/a/protocol.ts → actors/a/actor.ts',
    'actors/a/protocol.ts → libsql',
    'actors/a/protocol.ts → mailparser',
    'actors/b/protocol.ts → libsql',
  ]);
  const viaContract = rules.leafBreaks(files, edges).find((f) => f.key.endsWith('mailparser'))!;
  t.match(viaContract.message, 'actors/a/protocol.ts → actors/a/shape-messages.ts → mailparser', 'the path that reached it is named');
});

t.test('a cycle between contract modules is reported, type imports included', async (t) => {
  const { edges } = graphOf(t, {
    'actors/a/protocol.ts': "import { B } from '../b/protocol.ts';\nexport const A = B;\n",
    'actors/b/protocol.ts': "import type { A } from '../a/protocol.ts';\nexport const B = 1;\nexport type { A };\n",
    // Through a handler module: still two contracts bound together.
    'actors/c/protocol.ts': "import { run } from './run.ts';\nexport const C = run;\n",
    'actors/c/run.ts': "import { D } from './d-messages.ts';\nexport const run = D;\n",
    'actors/c/d-messages.ts': "import type { C } from './protocol.ts';\nexport const D = 1;\nexport type { C };\n",
    // Not between contracts: a handler cycle, and a protocol with its own handler.
    'actors/e/actor.ts': "import { f } from './run.ts';\nexport const e = f;\n",
    'actors/e/run.ts': "import { e } from './actor.ts';\nexport const f = e;\n",
    'actors/f/protocol.ts': "import type { State } from './actor.ts';\nexport type F = State;\n",
    'actors/f/actor.ts': "import type { F } from './protocol.ts';\nexport type State = number;\nexport type G = F;\n",
  });
  const found = rules.contractCycles(edges);
  t.same(keys(found), ['actors/a/protocol.ts ↔ actors/b/protocol.ts', 'actors/c/d-messages.ts ↔ actors/c/protocol.ts']);
  t.match(found.find((f) => f.key.startsWith('actors/a'))!.message, 'actors/b/protocol.ts:1 → actors/a/protocol.ts (type)', 'the way round is named');
});

t.test('bench/ importing what it may not is reported', async (t) => {
  const { edges } = graphOf(t, {
    'bench/scenarios/s.ts': src(
      ...[
        '../peers/daemon.ts',
        '../../test/helpers/ports.ts',
        '../../test/helpers/daemon.ts',
        '../../test/harness/dovecot.ts',
        '../../runtime/store/open.ts',
        '../../config/schema/outbox.ts',
        '../../actors/query/protocol.ts',
        '../../actors/query/search.ts',
        '../../test/runtime/store/helpers.ts',
        '../../http/mcp/tools.ts',
        '../../service/app.ts',
        'zod',
      ].map((to) => `import '${to}';`),
      "import type { State } from '../../actors/outbox/actor.ts';",
      'export type { State };',
    ),
  });
  t.same(keys(rules.benchBreaks(edges)), [
    'bench/scenarios/s.ts → actors/outbox/actor.ts',
    'bench/scenarios/s.ts → actors/query/search.ts',
    'bench/scenarios/s.ts → http/mcp/tools.ts',
    'bench/scenarios/s.ts → service/app.ts',
    'bench/scenarios/s.ts → test/helpers/daemon.ts',
    'bench/scenarios/s.ts → test/runtime/store/helpers.ts',
  ]);
  t.same(rules.reachIns(edges), [], 'bench/ is judged by its own rule, not the reach-in rule');
});

t.test('a bench module that names the daemon binary in its code starts a daemon of its own', async (t) => {
  const sources = [
    { file: 'bench/peers/daemon.ts', text: "const bin = fileURLToPath(new URL('../../bin/mailcairnd.js', import.meta.url));" },
    { file: 'bench/scenarios/own.ts', text: "spawn(process.execPath, [join(root, 'dist/bin/mailcairnd.js')]);" },
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a module that builds the path in a template literal
    { file: 'bench/scenarios/template.ts', text: 'spawn(process.execPath, [`${root}/bin/mailcairnd.js`, "--config", config]);' },
    { file: 'bench/scenarios/told.ts', text: '// the compiled daemon (dist/bin/mailcairnd.js), started by peers/daemon.ts\nexport {};' },
    { file: 'test/helpers/daemon.ts', text: "join(root, 'bin/mailcairnd.ts');" },
  ];
  t.same(rules.daemonStarters(sources), ['bench/peers/daemon.ts', 'bench/scenarios/own.ts', 'bench/scenarios/template.ts']);
});

t.test('a list of exceptions reports what it does not name and what no longer happens', async (t) => {
  const findings: rules.Finding[] = [
    { key: 'x → y', message: 'x:1 → y' },
    { key: 'x → z', message: 'x:2 → z' },
  ];
  t.same(rules.against(findings, { 'x → y': 'listed', 'gone → w': 'fixed since' }), { broken: ['x:2 → z'], gone: ['gone → w'] });
});

t.test('contract modules by name', async (t) => {
  const contracts = [
    'actors/a/protocol.ts',
    'actors/a/protocol-search.ts',
    'actors/a/protocol/search.ts',
    'actors/a/contracts/search.ts',
    'actors/a/outbox-messages.ts',
    'actors/a/answering-contract.ts',
  ];
  const handlers = ['actors/a/actor.ts', 'actors/a/search.ts', 'actors/a/run/protocol.ts', 'runtime/protocol/envelope.ts', 'http/mcp/outbox-messages.ts'];
  t.same(
    contracts.filter((f) => !rules.isContract(f)),
    [],
    'contracts',
  );
  t.same(handlers.filter(rules.isContract), [], 'not contracts');
});
