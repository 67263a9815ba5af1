/**
 * A private Courier IMAP (Debian's courier-imap 5.0, whose package conflicts with dovecot-imapd and
 * is therefore unpacked into /opt/courier-imap by .ci/run, beside the installed courier-authlib) as
 * the third real server: `couriertcpd` → `imaplogin` → `imapd` on a loopback port chosen at run time,
 * users in a userdb checked by an `authdaemond` of its own, Maildir++ folders in a temporary
 * directory. Root only.
 *
 * Courier's authentication library reads fixed paths (/etc/courier/authdaemonrc, /etc/courier/userdb,
 * the socket under /run/courier/authdaemon), so each server runs in a mount namespace of its own
 * (`unshare --mount`) where its private directories are bound over those two: two servers, or a
 * system-wide Courier, never see each other's users. The namespace's processes (couriertcpd, the
 * authdaemond workers, one imapd per session) form one process group, stopped together by its PID.
 *
 * Folders are named as Courier names them: `INBOX.Sent`, `.` as the delimiter, no SPECIAL-USE.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reservePort } from '../helpers/ports.ts';
import type { ImapPeer } from './imap-client.ts';
import { passwdEntry, removeDir, run, sleep, trackDir, trackPid, untrackPid, waitForGreeting, within, watchdog } from './processes.ts';

export type CourierUser = { user: string; password: string };

export type CourierOptions = {
  users?: CourierUser[];
  /** IMAP_CAPABILITY as imapd announces it; Debian's default when absent (no MOVE, CONDSTORE, SPECIAL-USE). */
  capability?: string;
  /** More environment for imapd (Courier's settings are environment variables, see /etc/courier/imapd). */
  environment?: Record<string, string>;
};

export type Courier = ImapPeer & {
  host: '127.0.0.1';
  port: number;
  users: CourierUser[];
  dir: string;
  /** PID of the running couriertcpd, leader of the server's process group (changes on restart). */
  pid: number;
  /** uid/gid that owns the maildirs. */
  mailOwner: { uid: number; gid: number };
  /** The user's Maildir (Maildir++: folder `INBOX.X` is `.X` inside it). */
  maildir(user: string): string;
  addUser(user: CourierUser): Promise<void>;
  log(): string;
  stop(): Promise<void>;
  restart(): Promise<void>;
};

/** Debian's /etc/courier/imapd default. */
export const COURIER_DEBIAN_CAPABILITY = 'IMAP4rev1 UIDPLUS CHILDREN NAMESPACE THREAD=ORDEREDSUBJECT THREAD=REFERENCES SORT QUOTA IDLE';
/** Folders every user starts with (Courier's usual set, made by maildirmake -f). */
export const COURIER_FOLDERS = ['INBOX.Sent', 'INBOX.Drafts', 'INBOX.Trash'];

const AUTHDAEMOND = '/usr/lib/courier/courier-authlib/authdaemond';
const MAKEUSERDB = '/usr/sbin/makeuserdb';

/** Where courier-imap's files are: an installed package (root `/`), or the copy .ci/run unpacks. */
function root(): string | undefined {
  const candidates = [process.env.MAILCAIRN_COURIER_ROOT, '/', '/opt/courier-imap'];
  return candidates.find((r): r is string => Boolean(r && existsSync(join(r, 'usr/bin/imapd')) && existsSync(join(r, 'usr/sbin/couriertcpd'))));
}

function tool(name: string): string | undefined {
  return ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((d) => join(d, name)).find((p) => existsSync(p));
}

/** Whether startCourier() can work here (binaries present, root, namespaces usable); tests skip otherwise. */
export function courierAvailable(): boolean {
  return (
    process.getuid?.() === 0 &&
    root() !== undefined &&
    existsSync(AUTHDAEMOND) &&
    existsSync(MAKEUSERDB) &&
    existsSync('/etc/courier') &&
    ['unshare', 'nsenter', 'mount', 'openssl'].every((t) => tool(t) !== undefined) &&
    (passwdEntry('mail') ?? passwdEntry('nobody')) !== undefined
  );
}

async function hashPassword(password: string): Promise<string> {
  return (await run('openssl', ['passwd', '-6', '-stdin'], password)).trim();
}

export async function startCourier(options: CourierOptions = {}): Promise<Courier> {
  if (!courierAvailable()) throw new Error('Courier needs root, courier-authlib(-userdb), courier-authdaemon and an unpacked courier-imap (see .ci/run)');
  const base = root()!;
  const owner = (passwdEntry('mail') ?? passwdEntry('nobody'))!;
  const users = (options.users ?? [{ user: 'alice', password: 'alice-password' }]).map((u) => ({ ...u }));
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-courier-'));
  trackDir(dir);
  chmodSync(dir, 0o755);
  const etc = join(dir, 'etc');
  const runDir = join(dir, 'run');
  for (const sub of [etc, runDir, join(runDir, 'authdaemon'), join(dir, 'home')]) mkdirSync(sub, { recursive: true, mode: 0o755 });
  // The mount points the namespace binds over; /run/courier is what courier-authdaemon's tmpfiles would make.
  mkdirSync('/run/courier', { recursive: true });
  const logFile = join(dir, 'courier.log');
  const userdb = join(etc, 'userdb');
  writeFileSync(
    join(etc, 'authdaemonrc'),
    ['authmodulelist="authuserdb"', 'daemons=2', 'authdaemonvar=/run/courier/authdaemon', 'DEBUG_LOGIN=0', 'DEFAULTOPTIONS=""', 'LOGGEROPTS=""', ''].join('\n'),
  );
  writeFileSync(userdb, '', { mode: 0o600 });

  const maildir = (user: string) => join(dir, 'home', user, 'Maildir');
  const maildirmake = join(base, 'usr/bin/maildirmake.courier');
  const addUserFiles = async (u: CourierUser) => {
    if (!/^[a-z][a-z0-9._-]*$/.test(u.user)) throw new Error('harness users are lower-case names');
    const home = join(dir, 'home', u.user);
    mkdirSync(home, { mode: 0o755 });
    await run(maildirmake, [maildir(u.user)]);
    for (const folder of COURIER_FOLDERS) await run(maildirmake, ['-f', folder.slice('INBOX.'.length), maildir(u.user)]);
    await run('chown', ['-R', `${owner.uid}:${owner.gid}`, home]);
    const hash = await hashPassword(u.password);
    const line = `${u.user}\tuid=${owner.uid}|gid=${owner.gid}|home=${home}|mail=${maildir(u.user)}|systempw=${hash}\n`;
    writeFileSync(userdb, readFileSync(userdb, 'utf8') + line, { mode: 0o600 });
  };
  for (const u of users) await addUserFiles(u);

  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let disarm: (() => void) | undefined;
  // A path no session uses (each user's `mail=` wins), unique to this server: the watchdog's marker.
  const marker = join(dir, 'Maildir');

  const environment = {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    IMAP_CAPABILITY: options.capability ?? COURIER_DEBIAN_CAPABILITY,
    IMAP_KEYWORDS: '1',
    IMAP_ACL: '1',
    IMAP_USELOCKS: '1',
    IMAP_ENHANCEDIDLE: '0',
    IMAP_IDLE_TIMEOUT: '60',
    IMAP_MAILBOX_SANITY_CHECK: '1',
    IMAP_TRASHFOLDERNAME: 'Trash',
    IMAP_MOVE_EXPUNGE_TO_TRASH: '0',
    IMAP_UMASK: '022',
    ...options.environment,
  };

  const stopChild = async () => {
    const c = child;
    child = undefined;
    if (!c?.pid) return;
    const group = c.pid;
    const signal = (s: NodeJS.Signals | 0) => {
      try {
        process.kill(-group, s);
        return true;
      } catch {
        return false;
      }
    };
    if (signal('SIGTERM') && !(await within(exited, 10_000))) signal('SIGKILL');
    await within(exited, 5_000);
    // The leader is gone; its group lives on while a member does (so the number cannot be reused): end stragglers.
    for (let i = 0; i < 50 && signal(0); i++) await sleep(100);
    signal('SIGKILL');
    untrackPid(group);
    disarm?.();
    disarm = undefined;
  };

  const launch = async () => {
    const script = [
      'set -e',
      `mount --bind "$1/etc" /etc/courier`,
      `mount --bind "$1/run" /run/courier`,
      MAKEUSERDB,
      `${AUTHDAEMOND} &`,
      `exec ${join(base, 'usr/sbin/couriertcpd')} -address=127.0.0.1 -maxprocs=40 -maxperip=40 -nodnslookup -noidentlookup "$2" ${join(base, 'usr/lib/courier/courier/imaplogin')} ${join(base, 'usr/bin/imapd')} "$3"`,
    ].join('\n');
    const log = openSync(logFile, 'a');
    // A process group of its own (detached): stopping it must reach authdaemond and every session, and nothing else.
    const c = spawn(tool('unshare')!, ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'courier', dir, String(port), marker], {
      stdio: ['ignore', log, log],
      detached: true,
      env: environment,
      cwd: dir,
    });
    closeSync(log);
    let gone = false;
    exited = new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.once('error', () => resolve());
    }).then(() => {
      gone = true;
    });
    c.unref();
    if (c.pid === undefined) throw new Error('could not spawn unshare');
    child = c;
    trackPid(c.pid, { group: true });
    disarm = watchdog(c.pid, marker, { group: true });
    try {
      await waitForGreeting(port, 8_000, () => gone);
    } catch (e) {
      await stopChild();
      throw new Error(`courier did not start: ${(e as Error).message}\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`);
    }
  };

  const startRetrying = async (samePort: boolean) => {
    for (let attempt = 1; ; attempt++) {
      if (!samePort) port = await reservePort();
      try {
        return await launch();
      } catch (e) {
        if (attempt >= 4) throw e;
        await sleep(250);
      }
    }
  };

  try {
    await startRetrying(false);
  } catch (e) {
    removeDir(dir);
    throw e;
  }

  let stopped = false;
  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    users,
    dir,
    get pid() {
      return child?.pid ?? 0;
    },
    mailOwner: { uid: owner.uid, gid: owner.gid },
    maildir,
    async addUser(u) {
      if (users.some((x) => x.user === u.user)) throw new Error(`user ${u.user} exists`);
      await addUserFiles(u);
      // Rebuild userdb.dat inside the server's namespace, where /etc/courier is this server's.
      if (child?.pid) await run(tool('nsenter')!, ['-t', String(child.pid), '-m', MAKEUSERDB]);
      users.push({ ...u });
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopChild();
      removeDir(dir);
    },
    async restart() {
      if (stopped) throw new Error('restart() after stop()');
      await stopChild();
      await startRetrying(true);
    },
  };
}
