/**
 * What the real-server harnesses (dovecot.ts, cyrus.ts) share about child processes: running a
 * command, waiting for an IMAP greeting, a self-signed certificate, and making sure a server we
 * started dies with us — SIGTERM by PID on exit, and a watchdog shell if we are killed outright.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

const pids = new Set<number>();
/** Leaders whose whole process group is ended on exit (servers that fork helpers: Courier). */
const groups = new Set<number>();
const dirs = new Set<string>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const pid of pids) {
      try {
        process.kill(groups.has(pid) ? -pid : pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    if (!keepDirs()) for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
}

/** Set MAILCAIRN_KEEP_SERVERS=1 to keep server directories (config, logs, mail) after a run. */
export function keepDirs(): boolean {
  return Boolean(process.env.MAILCAIRN_KEEP_SERVERS);
}

/** `group`: `pid` leads a process group of its own, and the whole group is ended with it. */
export function trackPid(pid: number, options: { group?: boolean } = {}): void {
  hook();
  pids.add(pid);
  if (options.group) groups.add(pid);
}
export function untrackPid(pid: number): void {
  pids.delete(pid);
  groups.delete(pid);
}
export function trackDir(dir: string): void {
  hook();
  dirs.add(dir);
}
/** Forget the directory and remove it (unless kept for debugging). */
export function removeDir(dir: string): void {
  dirs.delete(dir);
  if (!keepDirs()) rmSync(dir, { recursive: true, force: true });
}

/**
 * A shell that waits on a pipe from us; if we die without disarming it (crash, SIGKILL, tap
 * timeout), it sends SIGTERM to `pid`, after checking that the PID still runs with `marker`
 * (a config file path) among its arguments. With `group`, the signal goes to `pid`'s whole
 * process group (it must lead one). Returns the disarm function.
 */
export function watchdog(pid: number, marker: string, options: { group?: boolean } = {}): () => void {
  const target = options.group ? '"-$1"' : '"$1"';
  const script = `read -r word; [ "$word" = disarm ] && exit 0; if tr "\\000" "\\n" < /proc/$1/cmdline 2>/dev/null | grep -qxF -- "$2"; then kill -TERM ${target}; fi`;
  const dog: ChildProcess = spawn('/bin/sh', ['-c', script, 'watchdog', String(pid), marker], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void }).unref?.();
  dog.stdin!.on('error', () => {});
  return () => void dog.stdin!.end('disarm\n');
}

export function run(file: string, args: string[], input?: Buffer | string, timeout = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { timeout, maxBuffer: 1 << 30, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file.split('/').pop()} ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
    // A command that exits without reading its input (doveadm often does) must not turn into an EPIPE crash.
    child.stdin!.on('error', () => {});
    child.stdin!.end(input ?? '');
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** True if `p` settled within `ms`; the timer never outlives the wait. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolve once a client gets an untagged OK greeting on `port`; reject after `ms` or if `gone()`. */
export async function waitForGreeting(port: number, ms: number, gone: () => boolean = () => false): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (gone()) throw new Error('the server exited during start-up');
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port });
      let buf = '';
      const done = (v: boolean) => {
        s.destroy();
        resolve(v);
      };
      s.setTimeout(2000, () => done(false));
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        if (buf.includes('\n')) done(buf.startsWith('* OK'));
      });
      s.on('error', () => done(false));
      s.on('close', () => done(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`no IMAP greeting on 127.0.0.1:${port} within ${ms} ms`);
    await sleep(25);
  }
}

/** Resolve once something accepts TCP connections on `port`. */
export async function waitListening(port: number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listening on 127.0.0.1:${port}`);
    await sleep(25);
  }
}

/** A fresh self-signed P-256 certificate for localhost/127.0.0.1 in `<dir>/tls/`; returns the PEM. */
export async function makeCertificate(dir: string): Promise<{ pem: string; cert: string; key: string }> {
  const tls = join(dir, 'tls');
  mkdirSync(tls, { recursive: true, mode: 0o755 });
  const cert = join(tls, 'cert.pem');
  const key = join(tls, 'key.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  chmodSync(key, 0o644);
  return { pem: readFileSync(cert, 'utf8'), cert, key };
}

/** SIGTERM `pid`, wait for `exited`, SIGKILL after `graceMs`. */
export async function terminate(pid: number, exited: Promise<void>, graceMs = 10_000): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  if (await within(exited, graceMs)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
  await within(exited, 5_000);
}

export function passwdEntry(name: string): { uid: number; gid: number } | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f[2] !== undefined && f[3] !== undefined) return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}
