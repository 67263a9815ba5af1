/**
 * A private Cyrus IMAP (Debian's cyrus-common, plus the `imapd` binary of cyrus-imapd, which
 * conflicts with dovecot-imapd as a package and is therefore unpacked beside it by .ci/run) as a
 * second real server for the core sync suite: own config, spool and sasldb users, a loopback port
 * chosen at run time, stopped by PID. Root only (the master drops to the `cyrus` user).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

export type CyrusOptions = {
  users?: Array<{ user: string; password: string }>;
  /** Lines appended to imapd.conf. */
  extraConfig?: string;
  tls?: boolean;
};

export type Cyrus = ImapPeer & {
  host: '127.0.0.1';
  port: number;
  tlsPort?: number;
  certificate?: string;
  users: Array<{ user: string; password: string }>;
  dir: string;
  /** PID of the running master (changes on restart). */
  pid: number;
  addUser(user: { user: string; password: string }): Promise<void>;
  log(): string;
  stop(): Promise<void>;
  restart(): Promise<void>;
};

const MASTER = '/usr/lib/cyrus/bin/master';
const SASLPASSWD = '/usr/sbin/saslpasswd2';
const FOLDERS = ['Sent', 'Drafts', 'Trash', 'Archive', 'Junk'];

/** Where `imapd` (and `idled`) live: an installed cyrus-imapd, or the copy .ci/run unpacks. */
function binDir(): string | undefined {
  const candidates = [process.env.MAILCAIRN_CYRUS_BIN, '/usr/lib/cyrus/bin', '/opt/cyrus-imapd/usr/lib/cyrus/bin'];
  return candidates.find((d): d is string => Boolean(d && existsSync(join(d, 'imapd'))));
}

/** Whether startCyrus() can work here (binaries present, running as root); tests skip otherwise. */
export function cyrusAvailable(): boolean {
  return process.getuid?.() === 0 && existsSync(MASTER) && existsSync(SASLPASSWD) && binDir() !== undefined && passwdEntry('cyrus') !== undefined;
}

export async function startCyrus(options: CyrusOptions = {}): Promise<Cyrus> {
  if (!cyrusAvailable()) throw new Error('Cyrus needs root, cyrus-common, sasl2-bin and an imapd binary (see .ci/run)');
  const bin = binDir()!;
  const owner = passwdEntry('cyrus')!;
  const users = (options.users ?? [{ user: 'alice', password: 'alice-password' }]).map((u) => ({ ...u }));
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-cyrus-'));
  trackDir(dir);
  chmodSync(dir, 0o755);
  for (const sub of ['conf', 'spool', 'run', 'sieve']) mkdirSync(join(dir, sub));
  const conf = join(dir, 'imapd.conf');
  const cyrusConf = join(dir, 'cyrus.conf');
  const sasldb = join(dir, 'sasldb2');
  const logFile = join(dir, 'master.log');
  const cert = options.tls ? await makeCertificate(dir) : undefined;

  const addSasl = async (u: { user: string; password: string }) => {
    await run(SASLPASSWD, ['-p', '-c', '-f', sasldb, '-u', 'localhost', u.user], u.password);
    chownSync(sasldb, owner.uid, owner.gid);
  };
  for (const u of users) await addSasl(u);

  writeFileSync(
    conf,
    [
      `configdirectory: ${dir}/conf`,
      'defaultpartition: default',
      `partition-default: ${dir}/spool`,
      `sievedir: ${dir}/sieve`,
      `proc_path: ${dir}/run/proc`,
      `mboxname_lockpath: ${dir}/run/lock`,
      `lmtpsocket: ${dir}/run/lmtp`,
      `idlesocket: ${dir}/run/idle`,
      `notifysocket: ${dir}/run/notify`,
      'servername: localhost',
      'allowplaintext: yes',
      'sasl_pwcheck_method: auxprop',
      'sasl_auxprop_plugin: sasldb',
      `sasl_sasldb_path: ${sasldb}`,
      'sasl_mech_list: PLAIN LOGIN',
      'altnamespace: yes',
      'unixhierarchysep: yes',
      'autocreate_quota: 0',
      `autocreate_inbox_folders: ${FOLDERS.join(' | ')}`,
      `autocreate_subscribe_folders: ${FOLDERS.join(' | ')}`,
      ...FOLDERS.map((f) => `xlist-${f.toLowerCase()}: ${f}`),
      'expunge_mode: immediate',
      'delete_mode: immediate',
      'imapidlepoll: 1',
      `syslog_prefix: mailcairn-cyrus-${dir.split('/').pop()}`,
      ...(cert ? [`tls_server_cert: ${cert.cert}`, `tls_server_key: ${cert.key}`] : []),
      options.extraConfig ?? '',
      '',
    ].join('\n'),
  );
  for (const f of [dir, join(dir, 'conf'), join(dir, 'spool'), join(dir, 'run'), join(dir, 'sieve'), sasldb]) chownSync(f, owner.uid, owner.gid);

  let port = 0;
  let tlsPort: number | undefined;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let disarm: (() => void) | undefined;

  const writeServices = () =>
    writeFileSync(
      cyrusConf,
      [
        'START {',
        `  recover cmd="ctl_cyrusdb -r -C ${conf}"`,
        '}',
        'SERVICES {',
        `  imap cmd="${bin}/imapd -C ${conf}" listen="127.0.0.1:${port}" prefork=0`,
        ...(tlsPort ? [`  imaps cmd="${bin}/imapd -s -C ${conf}" listen="127.0.0.1:${tlsPort}" prefork=0`] : []),
        '}',
        'EVENTS {',
        '}',
        'DAEMON {',
        ...(existsSync(join(bin, 'idled')) ? [`  idled cmd="${bin}/idled -C ${conf}"`] : []),
        '}',
        '',
      ].join('\n'),
    );

  const stopChild = async () => {
    const c = child;
    child = undefined;
    if (!c?.pid) return;
    if (c.exitCode === null && c.signalCode === null) await terminate(c.pid, exited);
    untrackPid(c.pid);
    disarm?.();
    disarm = undefined;
  };

  const launch = async () => {
    writeServices();
    // A process group of its own: a Cyrus master shutting down signals its whole process group, which
    // otherwise holds every other Cyrus instance the test run started (seen: one instance's stop ended
    // another test's idled and master, "graceful shutdown initiated by unexpected process").
    const c = spawn(MASTER, ['-C', conf, '-M', cyrusConf, '-p', join(dir, 'run', 'master.pid'), '-L', logFile], { stdio: 'ignore', detached: true });
    let gone = false;
    exited = new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.once('error', () => resolve());
    }).then(() => {
      gone = true;
    });
    c.unref();
    if (c.pid === undefined) throw new Error(`could not spawn ${MASTER}`);
    child = c;
    trackPid(c.pid);
    disarm = watchdog(c.pid, conf);
    try {
      await waitForGreeting(port, 8_000, () => gone);
      if (tlsPort) await waitListening(tlsPort, 8_000);
    } catch (e) {
      await stopChild();
      throw new Error(`cyrus did not start: ${(e as Error).message}\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`);
    }
  };

  const startRetrying = async (samePorts: boolean) => {
    for (let attempt = 1; ; attempt++) {
      if (!samePorts) {
        port = await reservePort();
        tlsPort = options.tls ? await reservePort() : undefined;
      }
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
    get tlsPort() {
      return tlsPort;
    },
    ...(cert ? { certificate: cert.pem } : {}),
    users,
    dir,
    get pid() {
      return child?.pid ?? 0;
    },
    async addUser(u) {
      if (users.some((x) => x.user === u.user)) throw new Error(`user ${u.user} exists`);
      await addSasl(u);
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
