/**
 * `mailcairnd keyring new` and `mailcairnd keyring rotate`: creating a key ring
 * file and adding a fresh active key to one. Sole writer of key ring files.
 *
 * Files are written owner-only (0600) and replaced atomically (write a
 * sibling temporary file, then rename), so an interrupted rotation never
 * leaves a half-written ring: losing the ring loses every token sealed under
 * it. `new` refuses to overwrite an existing file unless forced.
 *
 * Synchronous; runs in the command, never in the service.
 */
import { chmodSync, closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors.ts';
import { newKeyRing, rotateKeyRing } from './keyring.ts';

const ownerOnly = 0o600;

/** With no `out`, returns the text only (the command prints it). */
export function keyringNew(options: { out?: string; force?: boolean }): { path?: string; text: string } {
  const text = newKeyRing();
  if (options.out === undefined) return { text };
  const path = resolve(options.out);
  if (options.force === true) {
    replaceFile(path, text);
  } else {
    let fd: number;
    try {
      fd = openSync(path, 'wx', ownerOnly);
    } catch (err) {
      if (isErrno(err, 'EEXIST')) {
        throw new AppError('E_KEYRING_EXISTS', {
          message: `${path} already exists; keep it, rotate it with \`mailcairnd keyring rotate\`, or pass --force to replace it (every value sealed under it is then lost)`,
        });
      }
      throw err;
    }
    writeAll(fd, text);
    syncDirectory(path);
  }
  return { path, text };
}

/** Adds a fresh key, makes it active, keeps the older ones; returns the new active key id. */
export function keyringRotate(path: string): { path: string; activeKeyId: string } {
  const absolute = resolve(path);
  let current: string;
  try {
    current = readFileSync(absolute, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) {
      throw new AppError('E_KEYRING_MISSING', { message: `there is no key ring at ${absolute}; create one with \`mailcairnd keyring new\`` });
    }
    throw err;
  }
  const text = rotateKeyRing(current);
  replaceFile(absolute, text);
  const activeKeyId = (JSON.parse(text) as { activeKeyId: string }).activeKeyId;
  return { path: absolute, activeKeyId };
}

function replaceFile(path: string, text: string): void {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', ownerOnly);
  try {
    writeAll(fd, text);
    chmodSync(temporary, ownerOnly);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw err;
  }
  syncDirectory(path);
}

// The rename is durable only once the directory entry is on disk too.
function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dirname(path), 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on a directory; the rename has still happened.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function writeAll(fd: number, text: string): void {
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === code;
}
