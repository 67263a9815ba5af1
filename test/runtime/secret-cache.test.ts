/**
 * The secret cache: every request sees the material as of its own arrival.
 * A rewrite finished before a request arrives is seen by that request; an
 * unchanged file costs a stat per request and no read; concurrent requests
 * share checks (one running, one queued per file), and a check that started
 * before a request does not satisfy it; a deleted file is refused on the
 * next request; a check that never answers counts as failed after the check
 * timeout and the queued one starts; failures never name the path; `read`
 * does no I/O. The cache keeps no clock: the order of checks and requests is
 * driven here by a fake file system whose answers are held and released.
 */
import { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createSecretCache, type SecretFiles } from '../../runtime/secret-cache.ts';
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

/**
 * One file in memory whose stat answers can be held: each stat looks at the
 * file when it is called and, while `held`, delivers its answer only on
 * `release()`. The mtime is a minute back (not racy); `write` changes the
 * content and the ctime, as a rewrite does.
 */
type HeldFile = {
  content: string;
  /** A minute back, fixed at creation. */
  mtimeMs: bigint;
  ctimeNs: bigint;
  held: boolean;
  stats: number;
  reads: number;
  waiting: Array<() => void>;
  write(next: string): void;
  release(): void;
  files: SecretFiles;
};

function heldFile(content: string): HeldFile {
  const mtimeMs = BigInt(Date.now() - 60_000);
  const file: HeldFile = {
    content,
    mtimeMs,
    ctimeNs: 1n,
    held: false,
    stats: 0,
    reads: 0,
    waiting: [],
    write(next: string): void {
      file.content = next;
      file.ctimeNs += 1n;
    },
    /** Deliver every held answer. */
    release(): void {
      for (const deliver of file.waiting.splice(0)) deliver();
    },
    files: {
      stat: async () => {
        file.stats += 1;
        const answer = { dev: 1n, ino: 2n, size: BigInt(file.content.length), mtimeNs: mtimeMs * 1_000_000n, ctimeNs: file.ctimeNs, mtimeMs };
        if (file.held) await new Promise<void>((r) => file.waiting.push(r));
        return answer;
      },
      readFile: async () => {
        file.reads += 1;
        return file.content;
      },
    },
  };
  return file;
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

/** Let pending promise callbacks and I/O run. */
const turn = (): Promise<void> => new Promise((r) => setTimeout(r, 10));

t.test('a rewrite finished before a request arrives is seen by that request; an unchanged file is stat-ed, not read', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.key');
  writeSettled(path, 'first-key\n');
  const files = countingFiles();
  const cache = createSecretCache({ files, env: {} });
  const ref = `file:${path}`;
  await cache.fresh([ref]);
  t.same([files.stats, files.reads], [1, 1], 'the first request waits for one stat and one read');
  t.equal(cache.read(ref), 'first-key', 'one trailing newline dropped, as readSecret does');

  for (let i = 0; i < 50; i++) {
    await cache.fresh([ref]);
    t.equal(cache.read(ref), 'first-key');
  }
  t.same([files.stats, files.reads], [51, 1], 'one stat per request, no read while the file is unchanged');

  writeSettled(path, 'second-key');
  t.equal(cache.read(ref), 'first-key', 'read does no I/O: memory answers until a check');
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'second-key', 'the very next request sees the rewrite');
  t.same([files.stats, files.reads], [52, 2]);

  writeSettled(path, 'third--key'); // the same size as the second
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'third--key', 'a same-size rewrite too (its ctime changed)');
});

t.test('concurrent requests share checks: one running, one queued, whatever the number of requests', async (t) => {
  const file = heldFile('key-one');
  const cache = createSecretCache({ files: file.files, env: {} });
  const ref = 'file:/run/agent.key';
  await cache.fresh([ref]);
  t.same([file.stats, file.reads], [1, 1]);

  file.held = true;
  let first = false;
  void cache.fresh([ref]).then(() => (first = true));
  await turn();
  t.equal(file.stats, 2, 'the first request started a check');
  const later: boolean[] = [];
  for (let i = 0; i < 100; i++) {
    const index = later.push(false) - 1;
    void cache.fresh([ref, ref]).then(() => (later[index] = true));
  }
  await turn();
  t.equal(file.stats, 2, '100 requests arriving meanwhile start nothing yet: their check is queued');

  file.release();
  await turn();
  t.ok(first, 'the first request has its check');
  t.notOk(later.some(Boolean), 'the check that started before them does not satisfy the later requests');
  t.equal(file.stats, 3, 'the queued check started once, for all of them');

  file.release();
  await turn();
  t.ok(later.every(Boolean), 'all 100 answered by the one queued check');
  t.equal(file.stats, 3, 'three stats for 101 requests; nothing is left running');
  t.equal(file.reads, 1, 'and no read: the file never changed');
});

t.test('a check in flight that started before a request does not satisfy it: the rewrite in between is seen', async (t) => {
  const file = heldFile('old-key');
  const cache = createSecretCache({ files: file.files, env: {} });
  const ref = 'file:/run/agent.key';
  await cache.fresh([ref]);

  file.held = true;
  let first = false;
  void cache.fresh([ref]).then(() => (first = true));
  await turn(); // the first request's stat looked at the old file; its answer is held
  file.write('new-key');
  let second = false;
  void cache.fresh([ref]).then(() => (second = true));

  file.release();
  await turn();
  t.ok(first);
  t.equal(cache.read(ref), 'old-key', 'the first request arrived before the rewrite: the old key is right for it');
  t.notOk(second, 'the second request waits for a check that started after it arrived');
  file.release();
  await turn();
  t.ok(second);
  t.equal(cache.read(ref), 'new-key', 'and sees the rewrite that finished before it arrived');
  t.equal(file.reads, 2);
});

t.test('a deleted file is refused on the next request; a restored one works again; an emptied one is refused', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.key');
  writeSettled(path, 'the-key');
  const cache = createSecretCache({ env: {}, setting: 'McpEndpoint:Authentication' });
  const ref = `file:${path}`;
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'the-key');

  rmSync(path);
  await cache.fresh([ref]);
  const gone = failure(() => cache.read(ref));
  t.equal(gone.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(gone.message, /McpEndpoint:Authentication.*file:.*nothing exists there/);
  t.notMatch(gone.message, new RegExp(dir), 'never the path');
  t.notMatch(gone.message, /the-key/, 'never the material');

  writeSettled(path, 'the-key');
  await cache.fresh([ref]);
  t.equal(cache.read(ref), 'the-key');

  writeSettled(path, '');
  await cache.fresh([ref]);
  t.match(failure(() => cache.read(ref)).message, /the material is empty/, 'an emptied file refuses too');
});

t.test('a same-size rewrite the timestamps cannot tell apart is read again while the file is recent', async (t) => {
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
  const cache = createSecretCache({ files, env: {} });
  await cache.fresh(['file:/run/agent.key']);
  content = 'key-bbbb';
  await cache.fresh(['file:/run/agent.key']);
  t.equal(cache.read('file:/run/agent.key'), 'key-bbbb', 'modified just now: read again, the rewrite is seen');

  mtimeMs -= 60_000n;
  await cache.fresh(['file:/run/agent.key']);
  const before = reads;
  content = 'key-cccc';
  await cache.fresh(['file:/run/agent.key']);
  t.equal(reads, before, 'an old, unchanged signature is trusted: no read');
});

t.test('a check that never answers counts as failed after the check timeout; the queued check then starts', async (t) => {
  const hung: SecretFiles = { stat: () => new Promise(() => {}), readFile: async () => 'never' };
  const cache = createSecretCache({ files: hung, env: {}, checkTimeoutMs: 30, setting: 'DataEncryption:KeyRing' });
  await cache.fresh(['systemd:keyring']);
  t.match(
    failure(() => cache.read('systemd:keyring')),
    { code: 'E_CONFIG_SECRET_UNREADABLE' },
    'no CREDENTIALS_DIRECTORY: refused',
  );
  // The check's timer does not hold the process open (a listener does, in the service): hold it here.
  const alive = setInterval(() => {}, 1_000);
  t.teardown(() => clearInterval(alive));

  const file = heldFile('the-key');
  file.held = true;
  const cache2 = createSecretCache({ files: file.files, env: { CREDENTIALS_DIRECTORY: '/run/credentials/x' }, checkTimeoutMs: 30 });
  const started = Date.now();
  const first = cache2.fresh(['systemd:keyring']);
  await turn();
  file.write('the-key-2'); // after the hung stat looked
  file.held = false; // the first stat stays held; the next one answers
  let second = false;
  void cache2.fresh(['systemd:keyring']).then(() => (second = true));
  await first;
  t.ok(Date.now() - started < 2_000, 'the request is not held longer than the check timeout');
  t.match(failure(() => cache2.read('systemd:keyring')).message, /\(systemd:\) could not be read/);
  await turn();
  t.ok(second, 'the queued check started when the hung one timed out');
  t.equal(cache2.read('systemd:keyring'), 'the-key-2');
  file.content = 'late-key'; // what the hung check would read, its stat showing a change
  file.release(); // the hung check answers at last
  await turn();
  t.equal(file.reads, 2, 'the hung check did read the file when it answered');
  t.equal(cache2.read('systemd:keyring'), 'the-key-2', 'its late answer changes nothing');
});

t.test('read does no I/O; refresh starts one check in the background unless one is running', async (t) => {
  const file = heldFile('the-key');
  const cache = createSecretCache({ files: file.files, env: {} });
  const ref = 'file:/run/agent.key';
  t.match(failure(() => cache.read(ref)).message, /has not been read yet/, 'before any check finished, read refuses rather than reading the file itself');
  t.equal(file.stats, 0);
  file.held = true;
  cache.refresh([ref]);
  cache.refresh([ref]);
  await turn();
  t.equal(file.stats, 1, 'one check for two refreshes');
  file.release();
  await turn();
  for (let i = 0; i < 100; i++) t.equal(cache.read(ref), 'the-key');
  t.same([file.stats, file.reads], [1, 1], '100 reads: no I/O');
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

t.test('fast path: a stat at arrival that matches what was read answers at once; a changed file is read before the request is judged', async (t) => {
  const file = heldFile('mc_first');
  let looks = 0;
  const files: SecretFiles = {
    ...file.files,
    statNow: () => {
      looks += 1;
      return { dev: 1n, ino: 2n, size: BigInt(file.content.length), mtimeNs: file.mtimeMs * 1_000_000n, ctimeNs: file.ctimeNs, mtimeMs: file.mtimeMs };
    },
  };
  const cache = createSecretCache({ files, env: {} });
  await cache.fresh(['file:/k']);
  t.equal(cache.read('file:/k'), 'mc_first');
  const [stats, reads] = [file.stats, file.reads];

  file.held = true; // an asynchronous check would now hang until released
  for (let i = 0; i < 50; i++) await cache.fresh(['file:/k']);
  t.equal(file.stats, stats, 'unchanged: no asynchronous check was started');
  t.equal(file.reads, reads, 'and nothing was read');
  t.equal(looks, 50, 'one stat at arrival per request');

  file.write('mc_second');
  let judged = false;
  const waiting = cache.fresh(['file:/k']).then(() => (judged = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(judged, 'changed: the request waits for the asynchronous check');
  file.release();
  await waiting;
  t.equal(cache.read('file:/k'), 'mc_second', 'and is judged against the new material');
});
