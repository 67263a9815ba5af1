/**
 * The running version: package.json's, stamped with the build's commit
 * (`0.1.0+abc1234`) when `npm run build` could read one. An unstamped build
 * reports itself as such, and clients then call the agreement unchecked.
 */
import { readFileSync } from 'node:fs';

const root = new URL(import.meta.url.includes('/dist/') ? '../../' : '../', import.meta.url);

function read(file: string): string | null {
  try {
    return readFileSync(new URL(file, root), 'utf8').trim();
  } catch {
    return null;
  }
}

const pkg = JSON.parse(read('package.json') ?? '{"version":"0.0.0"}') as { version: string };
const commit = read('dist/COMMIT');

export const version: string = commit && /^[0-9a-f]{7,40}$/.test(commit) ? `${pkg.version}+${commit}` : `${pkg.version}+unstamped`;
export const stamped: boolean = !version.endsWith('+unstamped');
