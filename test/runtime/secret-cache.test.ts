/**
 * The secret cache: material from memory with no I/O while it is younger
 * than the refresh interval, a background stat after it (a re-read only when
 * the file changed, or may have changed unseen), a wait only past the
 * rotation bound; a rewritten file seen and a deleted one refused within the
 * bound; a check that never answers counts as failed; failures never name
 * the path.
 */
import { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createSecretCache, SECRET_MAX_AGE_MS, SECRET_REFRESH_MS, type SecretFiles } from '../../runtime/secret-cache.ts';
import { fakeClock } from '../../runtime/clock.ts';
import { AppError } from '../../runtime/errors.ts';
import { tempDir } from '../helpers/daemon.ts';

/** node:fs/promises, counting calls. */
function countingFiles(): SecretFiles & { stats: number; reads: number } {
  const files = {
    stats: 0,
    reads: 0,
    stat: (path: string) => {
      files.stats += 1;
      return stat(path, { bigint: true });
    },
    readFile: (path: string) => {
      files.reads += 1;
      return readFile(path, 'utf8');
    },
  };
  return files;
}

/** Write `content` with an mtime a minute back, so the file is not "racy" (see secret-cache.ts). */
function writeSettled(path: string, content: string): void {
  writeFileSync(path, content);
  const past = new Date(Date.now() - 60_000);
  utimesSync(path, past, past);
}

function failure(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

t.test('the bound and the interval are what docs/security.md states', async (t) => {
  t.equal(SECRET_REFRESH_MS, 1_000);
  t.equal(SECRET_MAX_AGE_MS, 2_000);
});

t.test('within the refresh interval, material comes from memory with no I/O at all', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.key');
  writeSettled(path, 'first-key\n');
  const clock = fakeClock(1_000_000);
  const files = countingFiles();
  const cache = createSecretCache({ clock, files, env: {} });
  const ref = `file:${path}`;
  await cache.fresh([ref]);
  t.same([files.stats, files.reads], [1, 1], 'the first use waits for one stat and one read');
  t.equal(cache.read(ref), 'first-key', 'one trailing newline dropped, as readSecret does');
  for (let i = 0; i < 100; i++) {
    clock.advance(5);
    await cache.fresh([ref]);
    t.equal(cache.read(ref), 'first-key');
  }
  t.same([files.stats, files.reads], [1, 1], '100 uses over 500 ms: no further I/O');
});

t.test('past the interval: one background stat, no re-read of an unchanged file; a rewrite is read', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.key');
  writeSettled(path, 'first-key');
  const clock = fakeClock(1_000_000);
  const files = countingFiles();
  const cache = createSecretCache({ clock, files, env: {} });
  const ref = `file:${path}`;
  await cache.fresh([ref]);

  clock.advance(SECRET_REFRESH_MS);
  const pending = cache.fresh([ref]);
  t.equal(files.stats, 2, 'a check started');
  await pending;
  t.equal(cache.read(ref), 'first-key');
  await new Promise((r) => setTimeout(r, 20));
  t.same([files.stats, files.reads], [2, 1], 'the file did not change: stat only');

  writeSettled(path, 'second-key');
  t.equal(cache.read(ref), 'first-key', 'before the next check, memory still answers');
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'second-key', 'past the bound, the request waited for the check and sees the new key');
  t.same([files.stats, files.reads], [3, 2]);
});

t.test(
  'between the interval and the bound a request does not wait; past the bound it does, and never settles for an answer older than the bound',
  async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'agent.key');
    writeSettled(path, 'key');
    const clock = fakeClock(1_000_000);
    let release = (): void => {};
    const gate = { open: true };
    const files: SecretFiles = {
      // A slow file system: the answer is taken now and delivered when released.
      stat: async (p) => {
        const answer = await stat(p, { bigint: true });
        if (!gate.open) await new Promise<void>((r) => (release = r));
        return answer;
      },
      readFile: (p) => readFile(p, 'utf8'),
    };
    const cache = createSecretCache({ clock, files, env: {} });
    const ref = `file:${path}`;
    await cache.fresh([ref]);
    gate.open = false;

    clock.advance(SECRET_REFRESH_MS + 1);
    let settled = false;
    void cache.fresh([ref]).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    t.ok(settled, 'a check is due but the material is within the bound: answered at once');

    await new Promise((r) => setTimeout(r, 20));
    writeSettled(path, 'rotated-key');
    clock.advance(SECRET_MAX_AGE_MS);
    settled = false;
    void cache.fresh([ref]).then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    t.notOk(settled, 'past the bound: waits for the check in flight');
    gate.open = true;
    release();
    await new Promise((r) => setTimeout(r, 50));
    t.ok(settled);
    t.equal(cache.read(ref), 'rotated-key', 'the check in flight had looked before the rewrite: a second check was waited for');
  },
);

t.test('a deleted file stops the credential within the bound; a restored one works again', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.key');
  writeSettled(path, 'the-key');
  const clock = fakeClock(1_000_000);
  const cache = createSecretCache({ clock, env: {}, setting: 'McpEndpoint:Authentication' });
  const ref = `file:${path}`;
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'the-key');

  rmSync(path);
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh([ref]);
  const gone = failure(() => cache.read(ref));
  t.equal(gone.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(gone.message, /McpEndpoint:Authentication.*file:.*nothing exists there/);
  t.notMatch(gone.message, new RegExp(dir), 'never the path');
  t.notMatch(gone.message, /the-key/, 'never the material');

  writeSettled(path, 'the-key');
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'the-key');

  writeSettled(path, '');
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh([ref]);
  t.match(failure(() => cache.read(ref)).message, /the material is empty/, 'an emptied file refuses too');
});

t.test('a same-size rewrite the timestamps cannot tell apart is read again while the file is recent', async (t) => {
  const clock = fakeClock(1_000_000);
  let content = 'key-aaaa';
  let mtimeMs = BigInt(Date.now());
  let reads = 0;
  // A fake file system: a fixed identity and mtime whatever the content (the unseen-change case no real file can be made to show).
  const files: SecretFiles = {
    stat: async () => ({ dev: 1n, ino: 2n, size: 8n, mtimeNs: mtimeMs * 1_000_000n, ctimeNs: mtimeMs * 1_000_000n, mtimeMs }),
    readFile: async () => {
      reads += 1;
      return content;
    },
  };
  const cache = createSecretCache({ clock, files, env: {} });
  await cache.fresh(['file:/run/agent.key']);
  content = 'key-bbbb';
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh(['file:/run/agent.key']);
  t.equal(cache.read('file:/run/agent.key'), 'key-bbbb', 'modified just now: read again, the rewrite is seen');

  mtimeMs -= 60_000n;
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh(['file:/run/agent.key']);
  const before = reads;
  content = 'key-cccc';
  clock.advance(SECRET_MAX_AGE_MS);
  await cache.fresh(['file:/run/agent.key']);
  t.equal(reads, before, 'an old, unchanged signature is trusted: no read');
});

t.test('a check that never answers counts as failed after the check timeout', async (t) => {
  const clock = fakeClock(1_000_000);
  const files: SecretFiles = { stat: () => new Promise(() => {}), readFile: async () => 'never' };
  const cache = createSecretCache({ clock, files, env: {}, checkTimeoutMs: 30, setting: 'DataEncryption:KeyRing' });
  await cache.fresh(['systemd:keyring']);
  t.match(
    failure(() => cache.read('systemd:keyring')),
    { code: 'E_CONFIG_SECRET_UNREADABLE' },
    'no CREDENTIALS_DIRECTORY: refused',
  );
  // The check's timer does not hold the process open (a listener does, in the service): hold it here.
  const alive = setInterval(() => {}, 1_000);
  t.teardown(() => clearInterval(alive));
  const cache2 = createSecretCache({ clock, files, env: { CREDENTIALS_DIRECTORY: '/run/credentials/x' }, checkTimeoutMs: 30 });
  const started = Date.now();
  await cache2.fresh(['systemd:keyring']);
  t.ok(Date.now() - started < 2_000, 'the request is not held longer than the check timeout');
  t.match(failure(() => cache2.read('systemd:keyring')).message, /\(systemd:\) could not be read/);
});

t.test('env: references are looked up at each use, never cached', async (t) => {
  const env: NodeJS.ProcessEnv = { AGENT_KEY: 'one\n' };
  const cache = createSecretCache({ env });
  await cache.fresh(['env:AGENT_KEY']);
  t.equal(cache.read('env:AGENT_KEY'), 'one');
  env.AGENT_KEY = 'two';
  t.equal(cache.read('env:AGENT_KEY'), 'two');
  delete env.AGENT_KEY;
  t.equal(failure(() => cache.read('env:AGENT_KEY')).code, 'E_CONFIG_SECRET_UNREADABLE');
});

t.test('before any check finished, read refuses rather than reading the file itself', async (t) => {
  const files: SecretFiles = { stat: () => new Promise(() => {}), readFile: async () => 'x' };
  const cache = createSecretCache({ files, env: {}, checkTimeoutMs: 10 });
  t.match(failure(() => cache.read('file:/run/agent.key')).message, /has not been read yet/);
});
