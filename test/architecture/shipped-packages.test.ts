/**
 * What ships loads only what a production install has. Every module that
 * reaches the package (the files tsconfig.build.json compiles into dist/, as
 * the compiler lists them, less the folders package.json `files` leaves out)
 * loads at run time only Node's
 * own modules (`node:…`) and packages listed in package.json
 * `dependencies`: `npm install --omit=dev` installs nothing else, so a load
 * of a devDependency there fails with ERR_MODULE_NOT_FOUND the first time
 * its path runs (issue 26: the outbox loaded mailparser on the first reply
 * or forward).
 *
 * A load is a static import or re-export that the compiler keeps, a dynamic
 * `import('x')` or `require('x')` of a literal, or `import.meta.resolve('x')`
 * (import-graph.ts). Erased imports are no loads: with verbatimModuleSyntax
 * (checked below) that is `import type` and `export type` only, while
 * `import { type X } from 'x'` is still emitted as `import {} from 'x'`.
 * A deep import (`nodemailer/lib/mail-composer`) counts as its package.
 *
 * A failure names the load (file:line → specifier) and the package it needs.
 */
import { readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';
import { edgesOf, type Edge } from './import-graph.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const json = (file: string): Record<string, unknown> => JSON.parse(readFileSync(join(root, file), 'utf8')) as Record<string, unknown>;

const manifest = json('package.json') as { dependencies?: Record<string, string>; devDependencies?: Record<string, string>; files?: string[] };

/** The package a bare specifier names: `@scope/name` or `name`, without a deep path. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/**
 * Loads of development packages that never happen in what ships, each with
 * its reason. The test fails when a new one appears and when a listed one is
 * gone (so the list only shrinks).
 */
const KNOWN_DEV_LOADS: Record<string, string> = {
  'runtime/worker-entry.ts → tsx/esm/api':
    'resolved only for a `.ts` entry (sources under tsx: development and tests); built code starts its threads on `.js` entries and never reaches it',
};

/** The build as the compiler reads it (tsconfig.build.json with what it extends): its options and the files it emits into dist/. */
const build = ts.getParsedCommandLineOfConfigFile(
  join(root, 'tsconfig.build.json'),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  },
)!;
/** `!dist/<folder>/` entries of package.json `files`: emitted, but left out of the package. */
const unpacked = (manifest.files ?? []).flatMap((entry) => (/^!dist\/[^*]+\/$/.test(entry) ? [entry.slice('!dist/'.length)] : []));
const files = build.fileNames
  .map((file) => relative(root, file))
  .filter((file) => !file.endsWith('.d.ts') && !unpacked.some((folder) => file.startsWith(folder)))
  .sort();
const dependencies = new Set(Object.keys(manifest.dependencies ?? {}));
const loads = files.flatMap((file) => edgesOf(root, file)).filter((e) => e.external && !e.typeOnly);
const where = (e: Edge): string => `${e.from}:${e.line} → ${e.to}`;
const allowed = (e: Edge): boolean => e.to.startsWith('node:') || dependencies.has(packageOf(e.to));

t.test('what ships is what the build compiles', async (t) => {
  const folders = [...new Set(files.map((file) => file.split('/')[0]!))].sort();
  t.ok(folders.includes('actors') && folders.includes('bin'), `shipped folders: ${folders.join(', ')}`);
  t.notOk(folders.includes('test') || folders.includes('bench'), 'tests and benchmarks do not ship');
  t.ok(files.length > 100, `read the shipped sources (${files.length} modules)`);
  t.ok(loads.length > 50, `found their package loads (${loads.length})`);
});

t.test('only `import type` is erased: the build keeps verbatimModuleSyntax and compiles no JavaScript', async (t) => {
  t.equal(build.options.verbatimModuleSyntax, true, 'verbatimModuleSyntax: an import keeps its specifier unless written `import type`');
  // With allowJs, .mjs/.js sources (runtime/pool/source-task.mjs loads tsx) would reach dist/ and need checking too.
  t.notOk(build.options.allowJs, 'no JavaScript source is emitted into dist/');
});

t.test('shipped modules load only node: builtins and dependencies', async (t) => {
  const dev = new Set(Object.keys(manifest.devDependencies ?? {}));
  const broken = loads
    .filter((e) => !allowed(e) && !(`${e.from} → ${e.to}` in KNOWN_DEV_LOADS))
    .map((e) => {
      const name = packageOf(e.to);
      if (dev.has(name)) return `${where(e)}: ${name} is a devDependency, absent from a production install (load it only in tests, or list it in dependencies)`;
      if (isBuiltin(e.to)) return `${where(e)}: a Node builtin is written node:${e.to}`;
      return `${where(e)}: ${name} is not in package.json dependencies`;
    });
  t.same(broken, [], 'every run-time load names node:… or a package in dependencies');
  const gone = Object.keys(KNOWN_DEV_LOADS).filter((known) => !loads.some((e) => `${e.from} → ${e.to}` === known && !allowed(e)));
  t.same(gone, [], 'every listed development load still exists (remove it from the list once gone)');
});

t.test('the rule reads packages as the resolver does', async (t) => {
  t.equal(packageOf('nodemailer/lib/mail-composer'), 'nodemailer');
  t.equal(packageOf('@modelcontextprotocol/sdk/server/mcp.js'), '@modelcontextprotocol/sdk');
  t.equal(packageOf('zod'), 'zod');
});

t.test('what the compiler erases, and what it keeps as a load', async (t) => {
  const dir = t.testdir({
    'probe.ts': [
      "import type { A } from 'erased-import-type';",
      "export type { B } from 'erased-export-type';",
      "import { type C } from 'kept-inline-type';",
      "export { type D } from 'kept-export-inline-type';",
      "import { type E, f } from 'kept-mixed';",
      "import 'kept-side-effect';",
      "import * as g from 'kept-namespace';",
      "export { h } from 'kept-reexport';",
      "const i = await import('kept-dynamic');",
      "const j = require('kept-require');",
      "const k = import.meta.resolve('kept-resolve');",
      "let l: import('erased-type-position').L;",
      'export { f, g, i, j, k, l };',
      '',
    ].join('\n'),
  });
  const edges = edgesOf(dir, 'probe.ts');
  t.same(
    edges.filter((e) => e.typeOnly).map((e) => e.to),
    ['erased-import-type', 'erased-export-type', 'erased-type-position'],
  );
  t.same(
    edges.filter((e) => !e.typeOnly).map((e) => e.to),
    [
      'kept-inline-type',
      'kept-export-inline-type',
      'kept-mixed',
      'kept-side-effect',
      'kept-namespace',
      'kept-reexport',
      'kept-dynamic',
      'kept-require',
      'kept-resolve',
    ],
  );
});
