/**
 * `npm run release [-- <output folder>]`: the release assets of the operator
 * client (docs/cli.md "Binaries"), in `release/` unless another folder is
 * named:
 *  - `mailcairn.cjs`, the bundled client (packaging/client-bundle.ts), which
 *    runs on any Node 20 or later;
 *  - `mailcairn-linux-x64`, a single executable application: this machine's
 *    Node binary with the bundle injected (Node's SEA, with V8's code cache
 *    of the bundle, so a command compiles nothing at start-up);
 *  - `SHA256SUMS`, one `<sha256>  <file>` line per asset (`sha256sum -c`).
 *
 * Only Linux x64 is built here; the other platforms are built from the same
 * bundle with that platform's Node binary (docs/cli.md "Binaries"). The
 * binaries are not signed and carry no provenance attestation. Offline: the
 * Node binary is the one running this script (process.execPath).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** Injects `bundle` into a copy of this Node binary at `binary` as a single executable application. */
export function buildExecutable(bundle: string, binary: string): void {
  const work = mkdtempSync(join(tmpdir(), 'mailcairn-sea-'));
  try {
    const blob = join(work, 'sea-prep.blob');
    const config = join(work, 'sea-config.json');
    writeFileSync(config, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
    execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    rmSync(binary, { force: true });
    copyFileSync(process.execPath, binary);
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

export async function release(dir: string, options: ReleaseOptions = {}): Promise<Release> {
  mkdirSync(dir, { recursive: true });
  const bundle = await buildClientBundle({ outfile: join(dir, BUNDLE_ASSET), ...(options.version ? { version: options.version } : {}) });
  const binary = join(dir, LINUX_X64);
  buildExecutable(bundle, binary);
  const sums = join(dir, SUMS);
  writeFileSync(sums, sha256sums([bundle, binary]));
  return { dir, bundle, binary, sums };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    process.stderr.write(`This script builds ${LINUX_X64} from the Node binary running it; run it on Linux x64 (docs/cli.md "Binaries" for the others).\n`);
    process.exit(1);
  }
  const out = await release(resolve(process.argv[2] ?? 'release'));
  process.stdout.write(`${readFileSync(out.sums, 'utf8')}written to ${out.dir}\n`);
}
