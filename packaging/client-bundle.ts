/**
 * `npm run build:client`: the operator client (bin/mailcairn.ts and what it
 * imports, dependencies included) bundled by esbuild into CommonJS:
 * dist/cli/mailcairn.cjs, the packaged `mailcairn` command, with zod in
 * dist/cli/zod.cjs beside it, loaded by the first command that checks an
 * answer with it (zod is two thirds of the client's code, and Node compiles
 * a whole file before running it: `status` never needs zod). The release's
 * bundle (packaging/release.ts) is one file holding both: the script of the
 * single-file executables, which run one CommonJS script and carry its
 * compiled code, and an asset to run with `node` anywhere. Either way Node
 * resolves and reads no module from node_modules at start-up
 * (docs/performance.md "Client start-up").
 *
 * runtime/version.ts finds package.json and dist/COMMIT beside itself, which
 * a bundle (or an executable) does not have: the bundle gets the version as
 * a constant instead, computed the way `npm run build` stamps it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

// The checkout, from the sources or from their compiled copy under dist/ (the benchmarks run compiled).
const root = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../' : '../', import.meta.url));

export const CLIENT_BUNDLE = `${root}dist/cli/mailcairn.cjs`;

/** package.json's version with the commit (`0.1.0+abc1234`), as runtime/version.ts reports a stamped build; `+unstamped` outside a git checkout. */
export function stampedVersion(): string {
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string };
  let commit = '';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    // not a checkout: unstamped, as runtime/version.ts says without dist/COMMIT
  }
  return /^[0-9a-f]{7,40}$/.test(commit) ? `${pkg.version}+${commit}` : `${pkg.version}+unstamped`;
}

/** runtime/version.ts replaced by its two constants. */
function versionConstant(version: string): Plugin {
  return {
    name: 'mailcairn-version',
    setup(b) {
      b.onLoad({ filter: /[\\/]runtime[\\/]version\.ts$/ }, () => ({
        contents: `export const version = ${JSON.stringify(version)};\nexport const stamped = ${!version.endsWith('+unstamped')};\n`,
        loader: 'ts',
      }));
    },
  };
}

export type BundleOptions = {
  /** Where to write it (default dist/cli/mailcairn.cjs). */
  outfile?: string;
  /** The version the client reports (default stampedVersion()); a test gives the one its own sources report. */
  version?: string;
  /** One file holding zod too (the release's bundle), instead of zod in `zod.cjs` beside it (the packaged command; the default). */
  single?: boolean;
};

/** The file beside the packaged command that holds zod. */
export const ZOD_FILE = 'zod.cjs';

/**
 * zod's namespace object carries its ~40 message locales (half the bundle's
 * bytes, parsed by every command); the client shows no zod message and zod's
 * own default is English, so `z.locales` holds `en` only in the bundle.
 */
function zodEnglishOnly(): Plugin {
  return {
    name: 'zod-english-only',
    setup(b) {
      b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]zod[\\/]v4[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), '../locales/index.js'), namespace: 'zod-locales' } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
        contents: 'export { default as en } from "./en.js";\n',
        resolveDir: dirname(args.path),
        loader: 'js',
      }));
    },
  };
}

/** zod's imports in the client's own code, answered by `require('./zod.cjs')` at the importing module's first use. */
function zodApart(): Plugin {
  return {
    name: 'zod-apart',
    setup(b) {
      b.onResolve({ filter: /^zod$/ }, (args) => (/[\\/]node_modules[\\/]/.test(args.importer) ? undefined : { path: `./${ZOD_FILE}`, external: true }));
    },
  };
}

const COMMON = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Every command pays for compiling the whole file: the smallest file compiles fastest. The client never prints a stack trace.
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
} as const;

/** Builds the bundle (and zod's file beside it unless `single`); returns the bundle's path. */
export async function buildClientBundle(options: BundleOptions = {}): Promise<string> {
  const outfile = options.outfile ?? CLIENT_BUNDLE;
  const version = versionConstant(options.version ?? stampedVersion());
  if (options.single) {
    await build({ ...COMMON, entryPoints: [`${root}bin/mailcairn.ts`], outfile, plugins: [version, zodEnglishOnly()] });
    return outfile;
  }
  await build({ ...COMMON, entryPoints: [`${root}bin/mailcairn.ts`], outfile, plugins: [version, zodApart()] });
  await build({
    ...COMMON,
    stdin: { contents: "export * from 'zod';\n", resolveDir: root, loader: 'js' },
    outfile: join(dirname(outfile), ZOD_FILE),
    plugins: [zodEnglishOnly()],
  });
  return outfile;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const file = await buildClientBundle({ outfile: resolve(process.argv[2] ?? CLIENT_BUNDLE) });
  process.stdout.write(`${file}\n`);
}
