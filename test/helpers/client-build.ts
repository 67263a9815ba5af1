/**
 * The release assets of this checkout's client (packaging/release.ts), built
 * once and kept in the temporary directory under the SHA-256 of the bundle,
 * the Node binary and the release script: a later run with the same sources and the same Node
 * reuses them (a single executable takes seconds to build), and a change
 * to either builds anew and removes builds older than an hour. The version baked in is
 * the one these sources report (runtime/version.ts), so tests comparing
 * versions agree with the bundle. Beside them, under `packaged/`, the client
 * as `npm run build` makes it (dist/cli: the bundle with zod in a file of
 * its own beside it), which the benchmark times as the installed command.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildClientBundle } from '../../packaging/client-bundle.ts';
import { BUNDLE_ASSET, LINUX_X64, release, SUMS, type Release } from '../../packaging/release.ts';
import { version } from '../../runtime/version.ts';

const PREFIX = 'mailcairn-client-release-';

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

export type BuiltClient = Release & { reused: boolean /** The packaged command's bundle (zod.cjs beside it). */; packaged: string };

export async function builtClient(): Promise<BuiltClient> {
  const scratch = mkdtempSync(join(tmpdir(), 'mailcairn-client-bundle-'));
  let key: string;
  try {
    const bundle = await buildClientBundle({ outfile: join(scratch, BUNDLE_ASSET), single: true, version });
    // The release script's source, from the sources or from their compiled copy under dist/ (the benchmarks).
    const script = fileURLToPath(new URL(`${import.meta.url.includes('/dist/') ? '../../../' : '../../'}packaging/release.ts`, import.meta.url));
    key = createHash('sha256')
      .update(sha256(bundle))
      .update(sha256(process.execPath))
      .update(existsSync(script) ? sha256(script) : '')
      .digest('hex')
      .slice(0, 16);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const dir = join(tmpdir(), `${PREFIX}${key}`);
  const assets = { dir, bundle: join(dir, BUNDLE_ASSET), binary: join(dir, LINUX_X64), sums: join(dir, SUMS), packaged: join(dir, 'packaged', BUNDLE_ASSET) };
  if (existsSync(assets.sums)) return { ...assets, reused: true };
  // Older builds go once they are an hour old: a test run and a bench run beside it may each be using their own.
  for (const old of readdirSync(tmpdir()).filter((name) => name.startsWith(PREFIX))) {
    const path = join(tmpdir(), old);
    if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
  }
  // Built aside and renamed into place: an interrupted build is never taken for a finished one.
  const building = mkdtempSync(join(tmpdir(), 'mailcairn-client-building-'));
  try {
    await release(building, { version });
    await buildClientBundle({ outfile: join(building, 'packaged', BUNDLE_ASSET), version });
    renameSync(building, dir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return { ...assets, reused: false };
}
