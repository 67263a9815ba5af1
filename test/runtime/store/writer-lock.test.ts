import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { acquireWriterLock } from '../../../runtime/store/writer-lock.ts';
import { refusal, scratchDir, type TestLike } from './fixtures/scratch.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/hold-writer-lock.ts', import.meta.url));

type Child = { process: ChildProcessWithoutNullStreams; stdout: string; stderr: string };

/** Starts the fixture; resolves once it holds the lock or has exited. */
function start(t: TestLike, database: string): Promise<{ child: Child; held: boolean; code: number | null }> {
  const process_ = spawn(process.execPath, ['--import', 'tsx', fixture, database], { cwd: repoRoot, stdio: 'pipe' });
  const child: Child = { process: process_, stdout: '', stderr: '' };
  t.teardown(() => {
    if (process_.exitCode === null && process_.signalCode === null) process_.kill('SIGKILL');
  });
  return new Promise((resolvePromise) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      child.stdout += chunk.toString();
      if (child.stdout.includes('held\n')) resolvePromise({ child, held: true, code: null });
    });
    process_.stderr.on('data', (chunk: Buffer) => {
      child.stderr += chunk.toString();
    });
    process_.on('exit', (code) => resolvePromise({ child, held: false, code }));
  });
}

function exited(child: Child): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return Promise.resolve();
  return new Promise((resolvePromise) => child.process.on('exit', () => resolvePromise()));
}

t.test('a second acquire in the same process is refused at once, and release frees the lock', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const first = acquireWriterLock(database);
  const started = Date.now();
  const err = refusal(t, () => acquireWriterLock(database));
  t.equal(err?.code, 'E_STORE_LOCKED');
  t.match(err?.message, `another mailcairnd holds ${database}`);
  t.match(err?.message, 'Storage:Database');
  t.ok(Date.now() - started < 1000, 'refused without waiting on a busy timeout');
  first.release();
  first.release(); // idempotent
  const second = acquireWriterLock(database);
  second.release();
});

t.test('another process holding the database makes this one refuse; a kill releases it', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const holder = await start(t, database);
  t.ok(holder.held, `the first process holds the lock (stderr: ${holder.child.stderr})`);

  const inProcess = refusal(t, () => acquireWriterLock(database));
  t.equal(inProcess?.code, 'E_STORE_LOCKED');

  const second = await start(t, database);
  t.notOk(second.held, 'a second process does not get the lock');
  t.equal(second.code, 3, 'the second process exits with the refusal');
  t.match(second.child.stderr, /^E_STORE_LOCKED: another mailcairnd holds .*mail\.db/);
  t.match(second.child.stderr, 'will not start');

  holder.child.process.kill('SIGKILL');
  await exited(holder.child);
  const after = acquireWriterLock(database);
  t.pass('the lock of a killed process is released by the OS');
  after.release();
});

t.test('a process that exits without releasing leaves no stale lock', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const holder = await start(t, database);
  t.ok(holder.held);
  holder.child.process.stdin.write('exit\n');
  await exited(holder.child);
  t.equal(holder.child.process.exitCode, 0);
  const next = await start(t, database);
  t.ok(next.held, 'the next process takes the lock');
  next.child.process.kill('SIGKILL');
  await exited(next.child);
});

t.test('two spellings of one file meet at the same lock', async (t) => {
  const dir = scratchDir(t);
  symlinkSync(dir, join(dir, 'alias'));
  const first = acquireWriterLock(join(dir, 'mail.db'));
  t.teardown(() => first.release());
  const err = refusal(t, () => acquireWriterLock(join(dir, 'alias', 'mail.db')));
  t.equal(err?.code, 'E_STORE_LOCKED');
});

t.test('the lock is taken before the database directory exists', async (t) => {
  const database = join(scratchDir(t), 'not', 'yet', 'mail.db');
  const lock = acquireWriterLock(database);
  t.ok(existsSync(`${database}.lock`));
  t.equal(refusal(t, () => acquireWriterLock(database))?.code, 'E_STORE_LOCKED');
  lock.release();
});

t.test('server URLs and in-memory databases take no lock', async (t) => {
  for (const database of ['libsql://mail.example.org', 'https://mail.example.org', ':memory:']) {
    const a = acquireWriterLock(database);
    const b = acquireWriterLock(database);
    a.release();
    b.release();
  }
  t.pass();
});
