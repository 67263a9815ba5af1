/**
 * `npm run release [-- --out DIR] [-- --target NAME=NODE]…`: the release
 * assets of the operator client (docs/cli.md "Binaries"), in `release/`
 * unless `--out` names another folder:
 *  - `mailcairn.cjs`, the bundled client (packaging/client-bundle.ts), which
 *    runs on any Node 20 or later;
 *  - `mailcairn-linux-x64`, a single executable application: this machine's
 *    Node binary with the bundle injected (Node's SEA, with V8's code cache
 *    of the bundle, so a command compiles nothing at start-up);
 *  - `SHA256SUMS`, one `<sha256>  <file>` line per asset in the folder
 *    (`sha256sum -c`).
 *
 * Linux x64 is built from this machine's Node; each `--target` builds
 * another platform's executable from the same bundle and that platform's
 * Node binary of the same version (docs/cli.md "Binaries"). The
 * binaries are not signed and carry no provenance attestation. Offline: the
 * Node binary is the one running this script (process.execPath).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { buildClientBundle } from './client-bundle.ts';

/** The fuse Node's binary carries for SEA (docs: "Single executable applications"). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export const LINUX_X64 = 'mailcairn-linux-x64';
export const BUNDLE_ASSET = 'mailcairn.cjs';
export const SUMS = 'SHA256SUMS';

export type ReleaseOptions = {
  /** The client version baked into the bundle (default: package.json's and the commit, as `npm run build`). */
  version?: string;
};

export type Release = { dir: string; bundle: string; binary: string; sums: string };

/**
 * Injects `bundle` into a copy of `node` (default: the Node binary running
 * this) at `binary`, as a single executable application. The preparation blob
 * is made by the running Node, so `node` must be the same Node version; V8's
 * code cache is only usable on the platform that made it, so it is left out
 * for another platform's binary (Node's docs, "Single executable
 * applications": cross-platform blobs need useCodeCache false).
 */
export function buildExecutable(bundle: string, binary: string, node: string = process.execPath): void {
  const work = mkdtempSync(join(tmpdir(), 'mailcairn-sea-'));
  try {
    const blob = join(work, 'sea-prep.blob');
    const config = join(work, 'sea-config.json');
    const native = resolve(node) === resolve(process.execPath);
    writeFileSync(config, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: native }));
    execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    rmSync(binary, { force: true });
    copyFileSync(node, binary);
    chmodSync(binary, 0o755);
    // postject's own command, in a child: its ELF library prints harmless warnings ("Can't find string offset for section name"), shown only if it fails.
    const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
    execFileSync(process.execPath, [postject, binary, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], { stdio: ['ignore', 'ignore', 'pipe'] });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** `sha256sum` format: the hex digest, two spaces, the file name (text mode, as sha256sum prints it). */
export function sha256sums(files: readonly string[]): string {
  return files.map((file) => `${createHash('sha256').update(readFileSync(file)).digest('hex')}  ${basename(file)}\n`).join('');
}

/** Another platform's executable: its asset name and that platform's Node binary (the same Node version as this one). */
export type Target = { name: string; node: string };

export async function release(dir: string, options: ReleaseOptions & { targets?: readonly Target[] } = {}): Promise<Release> {
  mkdirSync(dir, { recursive: true });
  const bundle = await buildClientBundle({ outfile: join(dir, BUNDLE_ASSET), single: true, ...(options.version ? { version: options.version } : {}) });
  const binary = join(dir, LINUX_X64);
  buildExecutable(bundle, binary);
  for (const target of options.targets ?? []) buildExecutable(bundle, join(dir, target.name), target.node);
  // Every asset in the folder: another platform's binary built elsewhere and copied in is covered too.
  const assets = readdirSync(dir)
    .filter((name) => name === BUNDLE_ASSET || name.startsWith('mailcairn-'))
    .sort()
    .map((name) => join(dir, name));
  const sums = join(dir, SUMS);
  writeFileSync(sums, sha256sums(assets));
  return { dir, bundle, binary, sums };
}

/** `[--out DIR] [--target NAME=NODE_BINARY]…` */
function parseArguments(argv: readonly string[]): { out: string; targets: Target[] } {
  let out = 'release';
  const targets: Target[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--out' && value) out = value;
    else if (flag === '--target' && value && /^mailcairn-[a-z0-9-]+(\.exe)?=.+/.test(value)) {
      const at = value.indexOf('=');
      targets.push({ name: value.slice(0, at), node: resolve(value.slice(at + 1)) });
    } else throw new Error(`usage: npm run release -- [--out DIR] [--target mailcairn-<platform>[.exe]=<that platform's node binary>]… (at ${flag})`);
    i += 1;
  }
  return { out: resolve(out), targets };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    process.stderr.write(`This script builds ${LINUX_X64} from the Node binary running it; run it on Linux x64 (docs/cli.md "Binaries" for the others).\n`);
    process.exit(1);
  }
  const { out, targets } = parseArguments(process.argv.slice(2));
  const made = await release(out, { targets });
  process.stdout.write(`${readFileSync(made.sums, 'utf8')}written to ${made.dir}\n`);
}
