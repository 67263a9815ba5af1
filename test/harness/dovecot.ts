/**
 * A private Dovecot for tests: its own temporary directory, config file, passwd-file users and
 * maildirs, listening on a loopback port chosen at run time, run in the foreground as our child
 * and stopped by its PID. Owns the Dovecot process lifecycle only; mail placement lives in
 * place-mail.ts and changes behind the service's back in doveadm.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { reservePort } from '../helpers/ports.ts';
import type { ImapPeer } from './imap-client.ts';
import {
  makeCertificate,
  passwdEntry,
  removeDir,
  run,
  sleep,
  terminate,
  trackDir,
  trackPid,
  untrackPid,
  waitForGreeting,
  waitListening,
  watchdog,
} from './processes.ts';

export type DovecotUser = { user: string; password: string };

export type DovecotOptions = {
  users?: DovecotUser[];
  /** Appended at the end of the generated config, so it overrides what comes before. */
  extraConfig?: string;
  /** Also serve implicit TLS on `tlsPort` and offer STARTTLS on `port`, with a self-signed certificate. */
  tls?: boolean;
  /**
   * Also accept XOAUTH2 logins (an OAuth 2 passdb, Dovecot's `driver = oauth2`): the bearer token is
   * checked by POSTing it to `introspectionUrl` (RFC 7662; credentials of the resource server as
   * userinfo, sent as HTTP Basic), the answer must say `active: true` and name the login user in
   * `usernameAttribute` (default `sub`). Passwords keep working through the passwd-file passdb
   * (PLAIN and LOGIN only then); the users still come from the passwd-file userdb. Only XOAUTH2 is
   * offered, not OAUTHBEARER, so a client that prefers the latter still has to speak XOAUTH2.
   */
  oauth2?: { introspectionUrl: string; usernameAttribute?: string; debug?: boolean };
};

export type Dovecot = ImapPeer & {
  host: '127.0.0.1';
  port: number;
  tlsPort?: number;
  /** PEM of the self-signed certificate (when `tls`), to pass as `ca` to a client. */
  certificate?: string;
  users: DovecotUser[];
  dir: string;
  configFile: string;
  logFile: string;
  /** PID of the running master process (changes on restart). */
  pid: number;
  /** uid/gid that owns the maildirs (the `mail` user when run as root). */
  mailOwner: { uid: number; gid: number };
  /** The user's INBOX maildir (Maildir++: sub-folders are `.Name` inside it). */
  maildir(user: string): string;
  doveadm(args: string[], input?: Buffer | string): Promise<string>;
  addUser(user: DovecotUser): void;
  /** Declare a SPECIAL-USE mailbox in the config and reload (new sessions see it). */
  declareSpecialUse(mailbox: string, flag: string): Promise<void>;
  log(): string;
  stop(): Promise<void>;
  restart(): Promise<void>;
};

const DOVECOT_BIN = process.env.DOVECOT_BIN ?? (existsSync('/usr/sbin/dovecot') ? '/usr/sbin/dovecot' : 'dovecot');
const DOVEADM_BIN = process.env.DOVEADM_BIN ?? (existsSync('/usr/bin/doveadm') ? '/usr/bin/doveadm' : 'doveadm');
const OAUTH2_FILE = 'dovecot-oauth2.conf.ext';
const SPECIAL_USE: Array<[string, string]> = [
  ['Drafts', '\\Drafts'],
  ['Sent', '\\Sent'],
  ['Trash', '\\Trash'],
  ['Archive', '\\Archive'],
  ['Junk', '\\Junk'],
];

/** Who runs what: as root, mail belongs to `mail` and Dovecot's own users; otherwise all is us. */
function identities(): { root: boolean; internal: string; login: string; mail: { uid: number; gid: number } } {
  const me = userInfo();
  if (me.uid !== 0) return { root: false, internal: me.username, login: me.username, mail: { uid: me.uid, gid: me.gid } };
  for (const needed of ['dovecot', 'dovenull']) {
    if (!passwdEntry(needed)) throw new Error(`user ${needed} missing: install dovecot-core (see .ci/run)`);
  }
  const mail = passwdEntry('mail') ?? passwdEntry('nobody');
  if (!mail) throw new Error('no unprivileged user (mail or nobody) to own the maildirs');
  return { root: true, internal: 'dovecot', login: 'dovenull', mail };
}

function checkUser(u: DovecotUser): void {
  if (!/^[A-Za-z0-9._@+-]+$/.test(u.user)) throw new Error(`unsupported user name ${JSON.stringify(u.user)}`);
  if (/[:\n]/.test(u.password)) throw new Error('password may not contain ":" or a newline');
}

function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function renderConfig(o: { dir: string; port: number; tlsPort?: number; ids: ReturnType<typeof identities>; extra: string; oauth2: boolean }): string {
  const { dir, ids } = o;
  const chroot = ids.root ? '' : '\n  chroot =';
  // With OAuth: passwords only through the passwd-file (a token is no password), bearer tokens only through introspection.
  const passdbs = [
    `passdb {\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u ${dir}/users${o.oauth2 ? '\n  mechanisms = plain login' : ''}\n}`,
    ...(o.oauth2 ? [`passdb {\n  driver = oauth2\n  mechanisms = xoauth2\n  args = ${join(dir, OAUTH2_FILE)}\n}`] : []),
  ].join('\n');
  const mailboxes = SPECIAL_USE.map(([name, flag]) => `  mailbox ${name} {\n    special_use = ${flag}\n    auto = subscribe\n  }`).join('\n');
  const tls =
    o.tlsPort === undefined
      ? 'ssl = no'
      : [
          'ssl = yes',
          `ssl_cert = <${join(dir, 'tls', 'cert.pem')}`,
          `ssl_key = <${join(dir, 'tls', 'key.pem')}`,
          existsSync('/usr/share/dovecot/dh.pem') ? 'ssl_dh = </usr/share/dovecot/dh.pem' : '',
          'ssl_min_protocol = TLSv1.2',
        ].join('\n');
  const imaps =
    o.tlsPort === undefined
      ? '  inet_listener imaps {\n    port = 0\n  }'
      : `  inet_listener imaps {\n    address = 127.0.0.1\n    port = ${o.tlsPort}\n    ssl = yes\n  }`;
  return `# Generated by test/harness/dovecot.ts for one test run.
instance_name = mailcairn-${dir.split('/').pop()}
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
${tls}
disable_plaintext_auth = no
auth_mechanisms = plain login${o.oauth2 ? ' xoauth2' : ''}
auth_failure_delay = 0
default_internal_user = ${ids.internal}
default_internal_group = ${ids.root ? 'dovecot' : userGroupName()}
default_login_user = ${ids.login}
first_valid_uid = 1
first_valid_gid = 1
mail_uid = ${ids.mail.uid}
mail_gid = ${ids.mail.gid}
mail_location = maildir:${dir}/mail/%u
mail_fsync = never
mail_max_userip_connections = 1000
mailbox_idle_check_interval = 1 secs
default_client_limit = 2000
${passdbs}
userdb {
  driver = passwd-file
  args = username_format=%u ${dir}/users
  default_fields = uid=${ids.mail.uid} gid=${ids.mail.gid}
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${o.port}
  }
${imaps}${chroot}
}
service anvil {${chroot}
}
service imap-urlauth-login {${chroot}
}
namespace inbox {
  inbox = yes
  separator = /
${mailboxes}
}
!include_try ${dir}/special-use.conf
${o.extra}
`;
}

/** The oauth2 passdb's own file (dovecot-oauth2.conf.ext): token introspection by POST, nothing cached. */
function renderOAuth2(o: NonNullable<DovecotOptions['oauth2']>): string {
  if (/[\s"]/.test(o.introspectionUrl)) throw new Error('introspection URL may not contain white space or quotes');
  return [
    '# Generated by test/harness/dovecot.ts: XOAUTH2 bearer tokens checked by RFC 7662 introspection.',
    `introspection_url = ${o.introspectionUrl}`,
    'introspection_mode = post',
    `username_attribute = ${o.usernameAttribute ?? 'sub'}`,
    'active_attribute = active',
    'active_value = true',
    'timeout_msecs = 10000',
    `debug = ${o.debug ? 'yes' : 'no'}`,
    '',
  ].join('\n');
}

function userGroupName(): string {
  const gid = userInfo().gid;
  for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[2] === String(gid) && f[0]) return f[0];
  }
  return String(gid);
}

export async function startDovecot(options: DovecotOptions = {}): Promise<Dovecot> {
  const ids = identities();
  const users = (options.users ?? [{ user: 'alice', password: 'alice-password' }]).map((u) => ({ ...u }));
  users.forEach(checkUser);
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-dovecot-'));
  trackDir(dir);
  // Dovecot's own users (auth runs as `dovecot`) must traverse it and read the passwd-file.
  chmodSync(dir, 0o755);
  for (const sub of ['run', 'state', 'mail', 'home']) mkdirSync(join(dir, sub), { mode: 0o755 });
  if (ids.root) {
    chownSync(join(dir, 'mail'), ids.mail.uid, ids.mail.gid);
    chownSync(join(dir, 'home'), ids.mail.uid, ids.mail.gid);
  }
  const configFile = join(dir, 'dovecot.conf');
  const logFile = join(dir, 'dovecot.log');
  const usersFile = join(dir, 'users');
  const specialFile = join(dir, 'special-use.conf');
  const declared: Array<[string, string]> = [];
  const writeUsers = () => {
    const lines = users.map((u) => `${u.user}:{PLAIN}${u.password}::::${join(dir, 'home', u.user)}::`);
    writeFileSync(usersFile, `${lines.join('\n')}\n`, { mode: 0o644 });
  };
  writeUsers();
  writeFileSync(specialFile, '');
  // Read by the auth process (Dovecot's internal user when we are root); it holds the resource server's credentials.
  if (options.oauth2) writeFileSync(join(dir, OAUTH2_FILE), renderOAuth2(options.oauth2), { mode: 0o644 });
  const certificate = options.tls ? (await makeCertificate(dir)).pem : undefined;
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  let child: ChildProcess | undefined;
  let disarm: (() => void) | undefined;
  let exited: Promise<void> = Promise.resolve();
  let port = 0;
  let tlsPort: number | undefined;

  const stopChild = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c?.pid) return;
    if (c.exitCode === null && c.signalCode === null) await terminate(c.pid, exited);
    untrackPid(c.pid);
    disarm?.();
    disarm = undefined;
  };

  const launch = async (): Promise<void> => {
    writeFileSync(configFile, renderConfig({ dir, port, tlsPort, ids, extra: options.extraConfig ?? '', oauth2: options.oauth2 !== undefined }));
    rmSync(join(dir, 'run', 'master.pid'), { force: true });
    const c = spawn(DOVECOT_BIN, ['-c', configFile, '-F'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let gone = false;
    c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.once('error', () => resolve());
    }).then(() => {
      gone = true;
    });
    // A forgotten stop() must not keep the test process alive: the exit hook and watchdog end it.
    c.unref();
    (c.stderr as unknown as { unref?: () => void }).unref?.();
    if (c.pid === undefined) {
      await exited;
      throw new Error(`could not spawn ${DOVECOT_BIN}: ${stderr}`);
    }
    child = c;
    trackPid(c.pid);
    disarm = watchdog(c.pid, configFile);
    try {
      await waitForGreeting(port, 15_000, () => gone);
      if (tlsPort !== undefined) await waitListening(tlsPort, 15_000);
    } catch (e) {
      await stopChild();
      const log = readLog();
      const err = new Error(`dovecot did not start: ${(e as Error).message}\n${stderr}\n${log.split('\n').slice(-15).join('\n')}`);
      (err as Error & { portInUse?: boolean }).portInUse = /Address already in use/.test(stderr + log);
      throw err;
    }
  };

  /** Start, retrying on a port race: fresh ports each time, or the same ones after a pause. */
  const startRetrying = async (samePorts: boolean): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      if (!samePorts) {
        port = await reservePort();
        tlsPort = options.tls ? await reservePort() : undefined;
      }
      try {
        await launch();
        return;
      } catch (e) {
        if (!(e as { portInUse?: boolean }).portInUse || attempt >= (samePorts ? 20 : 5)) throw e;
        if (samePorts) await sleep(250);
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
    get tlsPort() {
      return tlsPort;
    },
    certificate,
    users,
    dir,
    configFile,
    logFile,
    get pid() {
      return child?.pid ?? 0;
    },
    mailOwner: ids.mail,
    maildir: (user) => join(dir, 'mail', user),
    doveadm: (args, input) => run(DOVEADM_BIN, ['-c', configFile, ...args], input),
    addUser(u) {
      checkUser(u);
      if (users.some((x) => x.user === u.user)) throw new Error(`user ${u.user} exists`);
      users.push({ ...u });
      writeUsers();
    },
    async declareSpecialUse(mailbox, flag) {
      declared.push([mailbox, flag]);
      const body = declared.map(([m, f]) => `  mailbox ${quote(m)} {\n    special_use = ${f}\n  }`).join('\n');
      writeFileSync(specialFile, `namespace inbox {\n${body}\n}\n`);
      if (!child?.pid) return;
      const before = countReloads(readLog());
      process.kill(child.pid, 'SIGHUP');
      for (const end = Date.now() + 10_000; countReloads(readLog()) === before; await sleep(20)) {
        if (Date.now() > end) throw new Error('dovecot did not log the reload');
      }
      await waitForGreeting(port, 10_000);
    },
    log: readLog,
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

function countReloads(log: string): number {
  return log.split('SIGHUP received').length - 1;
}
