/**
 * Every package the packed code can load resolves from a production install
 * (.ci/pack-check, issue 26): `node --import tsx test/dev/packed-imports.ts
 * APP_DIR`, where APP_DIR is an empty project into which the tarball was
 * installed with `--omit=dev`. Reads every `.js` file of the installed
 * package's `dist/` (the tarball carries no tests or benchmarks), collects
 * each bare specifier it imports (static, re-exported, or `import('x')` with a
 * literal, as TypeScript's own pre-processor reads them), and resolves each
 * one with Node's ESM resolver from inside the installed package. A
 * development dependency loaded at run time fails here even if no test
 * happens to reach the line that loads it. Exit 0 when all resolve; otherwise
 * each specifier that does not, with the files that import it, and exit 1.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';

const app = process.argv[2] ?? '';
if (app === '') {
  process.stderr.write('usage: node --import tsx test/dev/packed-imports.ts APP_DIR (an --omit=dev install of the packed tarball)\n');
  process.exit(2);
}
const dist = join(app, 'node_modules', 'mailcairn', 'dist');

function* scripts(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* scripts(path);
    else if (entry.name.endsWith('.js')) yield path;
  }
}

const builtins = new Set(builtinModules);
const isBare = (specifier: string): boolean => !/^(\.|\/|node:|file:|data:)/.test(specifier) && !builtins.has(specifier.split('/')[0]!);

const importers = new Map<string, string[]>();
let files = 0;
for (const file of scripts(dist)) {
  files++;
  for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
    if (!isBare(fileName)) continue;
    importers.set(fileName, [...(importers.get(fileName) ?? []), relative(dist, file)]);
  }
}

// Resolved by Node's own ESM resolver, from a module inside the installed package: what `import` would do.
const resolver = `
const unresolved = [];
for (const specifier of JSON.parse(process.argv[1])) {
  try { import.meta.resolve(specifier); } catch (err) { unresolved.push([specifier, err.code ?? err.message]); }
}
process.stdout.write(JSON.stringify(unresolved));`;
const unresolved = JSON.parse(
  execFileSync(process.execPath, ['--input-type=module', '--eval', resolver, JSON.stringify([...importers.keys()])], { cwd: dist, encoding: 'utf8' }),
) as Array<[string, string]>;

if (unresolved.length > 0) {
  for (const [specifier, why] of unresolved)
    process.stdout.write(`'${specifier}' does not resolve (${why}); imported by ${importers.get(specifier)!.join(', ')}\n`);
  process.stdout.write(`packed-imports: ${unresolved.length} of ${importers.size} packages the packed code imports are missing from a production install\n`);
  process.exit(1);
}
process.stdout.write(`-- packed-imports: all ${importers.size} packages imported by ${files} files of dist/ resolve from the --omit=dev install\n`);
