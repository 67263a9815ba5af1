/**
 * A private rspamd for tests (Debian's /usr/bin/rspamd 3.x): its own
 * temporary directory holding the local configuration, database, run and
 * log directories; its normal worker, proxy and controller each on a
 * loopback port reserved at run time (so two tests can each run one), run in
 * the foreground as our child, leading a process group of its own, and
 * stopped by its PID (SIGTERM to the group, SIGKILL after a grace period).
 *
 * rspamd drops privileges to `_rspamd` (it must be started as root, as the
 * Debian service is): the directory is handed to that user.
 *
 * rspamd renames its main process ("rspamd: main process"), so the watchdog
 * cannot find it by an argument: it checks the process's working directory,
 * which is this run's directory.
 *
 * `stop()` then `start()` brings the same engine back on the same port: the
 * "engine down, then back" tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservePort } from '../helpers/ports.ts';
import { passwdEntry, removeDir, sleep, terminate, trackDir, trackPid, untrackPid } from './processes.ts';

const RSPAMD_BIN = process.env.RSPAMD_BIN ?? (existsSync('/usr/bin/rspamd') ? '/usr/bin/rspamd' : 'rspamd');
const RSPAMD_USER = '_rspamd';

/** What `POST /checkv2` answers (the fields the tests read). */
export type CheckAnswer = { score: number; required_score: number; action: string; is_skipped?: boolean; symbols?: Record<string, unknown> };

export type Rspamd = {
  /** The normal worker's port. */
  port: number;
  /** `http://127.0.0.1:<port>`: what `Spam:Engine:Address` names. */
  url: string;
  dir: string;
  pid: number;
  /** Checks one raw message directly (the tests' own view of the engine). */
  check(raw: string | Uint8Array): Promise<CheckAnswer>;
  /** What it logged so far (for a failure message). */
  log(): string;
  /** Starts it again after `stop()`, on the same ports. */
  start(): Promise<void>;
  /** Stops the process (the directory stays until `close()`). */
  stop(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
};

function ownerId(name: string): { uid: number; gid: number } {
  const entry = passwdEntry(name);
  if (entry === undefined) throw new Error(`no ${name} user (is the rspamd package installed?)`);
  return entry;
}

function chownTree(path: string, uid: number, gid: number): void {
  chownSync(path, uid, gid);
  if (!statSync(path).isDirectory()) return;
  for (const entry of readdirSync(path)) chownTree(join(path, entry), uid, gid);
}

/** A watchdog like processes.ts's, recognising the process by its working directory (rspamd rewrites its arguments). */
function cwdWatchdog(pid: number, dir: string): () => void {
  const script = 'read -r word; [ "$word" = disarm ] && exit 0; if [ "$(readlink /proc/$1/cwd 2>/dev/null)" = "$2" ]; then kill -TERM "-$1"; fi';
  const dog: ChildProcess = spawn('/bin/sh', ['-c', script, 'watchdog', String(pid), dir], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void }).unref?.();
  dog.stdin!.on('error', () => {});
  return () => void dog.stdin!.end('disarm\n');
}

export async function startRspamd(): Promise<Rspamd> {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-rspamd-'));
  trackDir(dir);
  const local = join(dir, 'local.d');
  for (const sub of [local, join(dir, 'db'), join(dir, 'run')]) mkdirSync(sub);
  const [port, proxyPort, controllerPort] = [await reservePort(), await reservePort(), await reservePort()];
  const bind = (p: number): string => `bind_socket = "127.0.0.1:${p}";\n`;
  writeFileSync(join(local, 'worker-normal.inc'), bind(port));
  writeFileSync(join(local, 'worker-proxy.inc'), bind(proxyPort));
  writeFileSync(join(local, 'worker-controller.inc'), bind(controllerPort));
  // No DNS lookups from a test machine without a network: they would only slow each check down.
  writeFileSync(join(local, 'options.inc'), 'dns { timeout = 0.1s; retransmits = 1; }\n');
  const { uid, gid } = ownerId(RSPAMD_USER);
  chownTree(dir, uid, gid);

  let child: ChildProcess | undefined;
  let disarm: (() => void) | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';

  const stopChild = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c?.pid) return;
    if (c.exitCode === null && c.signalCode === null) await terminate(c.pid, exited, 10_000);
    try {
      // A worker the main process left behind goes with its group.
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      // the group is gone
    }
    untrackPid(c.pid);
    disarm?.();
    disarm = undefined;
  };

  const launch = async (): Promise<void> => {
    output = '';
    const c = spawn(
      RSPAMD_BIN,
      [
        '-f',
        '-u',
        RSPAMD_USER,
        '-g',
        RSPAMD_USER,
        '-c',
        '/etc/rspamd/rspamd.conf',
        `--var=DBDIR=${join(dir, 'db')}`,
        `--var=RUNDIR=${join(dir, 'run')}`,
        `--var=LOCAL_CONFDIR=${dir}`,
        `--var=LOGDIR=${dir}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, detached: true },
    );
    let gone = false;
    const keep = (d: Buffer): void => {
      output = (output + d.toString()).slice(-20_000);
    };
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    exited = new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.once('error', () => resolve());
    }).then(() => {
      gone = true;
    });
    c.unref();
    (c.stdout as unknown as { unref?: () => void }).unref?.();
    (c.stderr as unknown as { unref?: () => void }).unref?.();
    if (c.pid === undefined) {
      await exited;
      throw new Error(`could not spawn ${RSPAMD_BIN}: ${output}`);
    }
    child = c;
    trackPid(c.pid, { group: true });
    disarm = cwdWatchdog(c.pid, dir);
    try {
      await waitPong(port, 90_000, () => gone);
    } catch (e) {
      await stopChild();
      throw new Error(`rspamd did not start: ${(e as Error).message}\n${output.split('\n').slice(-15).join('\n')}`);
    }
  };

  try {
    await launch();
  } catch (e) {
    removeDir(dir);
    throw e;
  }

  const url = `http://127.0.0.1:${port}`;
  let closed = false;
  return {
    port,
    url,
    dir,
    get pid() {
      return child?.pid ?? 0;
    },
    async check(raw) {
      const res = await fetch(`${url}/checkv2`, { method: 'POST', body: raw, signal: AbortSignal.timeout(30_000) });
      if (res.status !== 200) throw new Error(`rspamd /checkv2 answered ${res.status}`);
      return (await res.json()) as CheckAnswer;
    },
    log: () => output,
    async start() {
      if (child !== undefined) return;
      await launch();
    },
    stop: stopChild,
    async close() {
      if (closed) return;
      closed = true;
      await stopChild();
      removeDir(dir);
    },
  };
}

/** Resolves once `/ping` answers `pong`; rejects after `ms` or if `gone()`. */
async function waitPong(port: number, ms: number, gone: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (gone()) throw new Error('the process exited during start-up');
    try {
      const res = await fetch(`http://127.0.0.1:${port}/ping`, { signal: AbortSignal.timeout(2_000) });
      const text = await res.text();
      if (res.status === 200 && text.trim() === 'pong') return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`/ping did not answer pong on 127.0.0.1:${port} within ${ms} ms`);
    await sleep(200);
  }
}
