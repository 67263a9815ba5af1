/**
 * The real `mailcairnd` process with `Telemetry` on, for the end-to-end
 * telemetry tests (test/integration/telemetry-*.test.ts): a private Dovecot
 * with one account (`tess`) holding generated mail in two folders (aliases
 * `inbox` and `archive`) plus one message of our own with an attachment, the
 * MCP listener (attachment links issued), the administrative listener and
 * the health listener, and the `Telemetry` section the test passes (shape:
 * the agreed one, /tmp/tel/config-shape.md, owned by the SDK part).
 *
 * Credentials: MCP `agent` (every tool) and `mailonly` (service.mail.read
 * only); admin `operator` (every permission), `reader` (service.admin.read)
 * and `nothing` ([]). Every secret of the run (keys, subjects, addresses,
 * message ids, the query, capabilities) is gathered in `secrets`, for the
 * privacy scan.
 *
 * `fault: 'asserted-contacts'` places, before the service starts, a trigger
 * that RAISEs on every insert of an asserted contact (the pattern of
 * test/actors/imap-sync/defects.test.ts): `create_contact` then crashes the
 * contacts actor for real (a SQLite error in its handler), the supervisor
 * restarts it, and the caller's ask ends E_ACTOR_DOWN, an undiagnosed
 * failure (54001 with a trace id). Collected contacts (the sync's) still
 * store.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Test } from 'tap';
import { migrate } from '../../runtime/store/migrate.ts';
import { openStore } from '../../runtime/store/open.ts';
import { newKeyRing } from '../../runtime/keyring/keyring.ts';
import { type Dovecot, startDovecot } from '../harness/dovecot.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { adminEndpointSection, adminCall, type AdminAnswer } from './admin-client.ts';
import { type Daemon, listenerPort, spawnDaemon, tempDir, writeConfig } from './daemon.ts';
import { readMirror } from './mirror.ts';
import { reservePort } from './ports.ts';
import { sensitiveStrings } from './privacy.ts';

export const ACCOUNT = 'tess';
/** Folder aliases and the server folders they mirror. */
export const FOLDERS = { inbox: 'INBOX', archive: 'Archive' } as const;
export type FolderAlias = keyof typeof FOLDERS;

/** Words of our own message, found by search and nowhere else. */
const TAG = randomUUID().slice(0, 8);
export const OWN_SUBJECT = `Zephyrquill invoice ${TAG} for the harbour works`;
export const OWN_FROM = `ottoline.brash.${TAG}@harbour-works.example`;
export const OWN_TO = `tess.${TAG}@mailcairn-test.example`;
export const OWN_MESSAGE_ID = `${TAG}.zephyrquill@harbour-works.example`;
/** What the test searches for: query text, which must reach no label or span. */
export const QUERY_TEXT = `zephyrquill ${TAG}`;
/** The person create_contact names. */
export const CONTACT = { name: `Philippa Quennell-${TAG}`, address: `philippa.q.${TAG}@contacts.example`, note: `Met at the ${TAG} quay` };

export type TelemetryDaemonOptions = {
  /** The `Telemetry` section, as written in the configuration. */
  telemetry: Record<string, unknown>;
  /** Extra environment of the daemon (OTEL_… variables); `undefined` removes one inherited from the test. */
  env?: Record<string, string | undefined>;
  fault?: 'asserted-contacts';
  /** Generated messages per folder (default inbox 40, archive 12). */
  counts?: Partial<Record<FolderAlias, number>>;
};

export type McpCaller = {
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** A call the SDK answers with a JSON-RPC error (a tool not granted reads as unknown): its code. */
  callRefused(name: string, args: Record<string, unknown>): Promise<number>;
};

export type TelemetryDaemon = {
  daemon: Omit<Daemon, 'port' | 'dir'>;
  dir: string;
  database: string;
  dovecot: Dovecot;
  /** Messages placed, per alias (what the mirror must hold once done). */
  placed: Record<FolderAlias, number>;
  mcpPort: number;
  adminPort: number;
  healthPort: number;
  keys: { agent: string; mailonly: string; operator: string; reader: string; nothing: string };
  mcp(key: 'agent' | 'mailonly'): Promise<McpCaller>;
  admin(path: string, key: 'operator' | 'reader' | 'nothing', init?: { method?: 'GET' | 'POST'; json?: unknown }): Promise<AdminAnswer>;
  /** Messages the mirror holds for an alias (read from the database, read-only). */
  mirrored(alias: FolderAlias): number;
  /** Waits until the mirror holds every placed message of every folder. */
  waitMirrored(timeoutMs?: number): Promise<void>;
  /** Every string of the run that must reach no label, span name or attribute; grows as the test adds what it used (`secrets.add`). */
  secrets: Set<string>;
  /** SIGTERM, and the exit (a clean stop flushes what the SDK still holds). SIGKILL after 15 s. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/**
 * The OpenTelemetry variables the test process may have inherited, removed
 * from the daemon's environment (an undefined value is not passed on), so
 * only what a test sets applies.
 */
const HERMETIC_OTEL_ENV: Record<string, undefined> = Object.fromEntries(
  Object.keys(process.env)
    .filter((name) => name.startsWith('OTEL_') || name.startsWith('MAILCAIRN__'))
    .map((name) => [name, undefined]),
);

function key(): string {
  return `mc_${randomUUID().replaceAll('-', '')}`;
}

function ownMessage(): Buffer {
  const boundary = `b-${TAG}`;
  return Buffer.from(
    [
      `From: Ottoline Brash <${OWN_FROM}>`,
      `To: Tess <${OWN_TO}>`,
      `Subject: ${OWN_SUBJECT}`,
      `Message-ID: <${OWN_MESSAGE_ID}>`,
      'Date: Tue, 03 Jun 2025 09:30:00 +0000',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      `The zephyrquill invoice ${TAG} is attached.`,
      `--${boundary}`,
      `Content-Type: application/pdf; name="invoice-${TAG}.pdf"`,
      `Content-Disposition: attachment; filename="invoice-${TAG}.pdf"`,
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from(`%PDF-1.4 invoice ${TAG} `.repeat(20)).toString('base64'),
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  );
}

export async function startTelemetryDaemon(t: Test, options: TelemetryDaemonOptions): Promise<TelemetryDaemon> {
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const secrets = new Set<string>([OWN_SUBJECT, OWN_FROM, OWN_TO, OWN_MESSAGE_ID, QUERY_TEXT, TAG, CONTACT.name, CONTACT.address, CONTACT.note]);

  const dovecot = await startDovecot({ users: [{ user: ACCOUNT, password: `pw-${TAG}` }] });
  t.teardown(() => dovecot.stop());
  const counts = { inbox: options.counts?.inbox ?? 40, archive: options.counts?.archive ?? 12 };
  const raws: Buffer[] = [];
  const placed = { inbox: 0, archive: 0 } as Record<FolderAlias, number>;
  for (const [alias, seed] of [
    ['inbox', 311],
    ['archive', 312],
  ] as const) {
    const generated = [...generateMailbox({ seed, count: counts[alias], profile: 'small' })];
    const messages = generated.map((m) => ({ raw: m.raw }));
    if (alias === 'inbox') messages.push({ raw: ownMessage() });
    for (const m of generated) {
      raws.push(m.raw);
      if (m.subject.length >= 8) secrets.add(m.subject);
      secrets.add(m.messageId.replace(/^<|>$/g, ''));
    }
    placed[alias] = await writeMaildir(dovecot, ACCOUNT, FOLDERS[alias], messages);
  }
  raws.push(ownMessage());
  for (const s of sensitiveStrings(raws)) secrets.add(s);

  if (options.fault === 'asserted-contacts') {
    const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
    migrate(setup);
    setup.exec(
      `CREATE TRIGGER test_fault_on_asserted_contact BEFORE INSERT ON contacts WHEN NEW.origin = 'asserted' BEGIN SELECT RAISE(ABORT, 'fault injected by the test'); END`,
    );
    setup.close();
  }

  const keys = { agent: key(), mailonly: key(), operator: key(), reader: key(), nothing: key() };
  for (const k of Object.values(keys)) secrets.add(k);
  const secretFile = (name: string, value: string): string => {
    writeFileSync(join(dir, name), value, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  // Known before start: attachment links name it (Deployment:PublicBaseAddress).
  const mcpPort = await reservePort();
  const config = {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    DataEncryption: { KeyRing: `file:${keyRingFile}` },
    Deployment: { PublicBaseAddress: `http://127.0.0.1:${mcpPort}` },
    MailSynchronization: { Enabled: true, Interval: '01:00:00', BatchSize: 20 },
    Accounts: [
      {
        Id: ACCOUNT,
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: ACCOUNT, Password: secretFile('imap.password', `pw-${TAG}`) },
        Folders: (Object.keys(FOLDERS) as FolderAlias[]).map((alias) => ({ Alias: alias, Path: FOLDERS[alias] })),
      },
    ],
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: mcpPort,
      Authentication: [
        { ApiKey: { Name: 'agent', SecretReference: secretFile('agent.key', keys.agent), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'mailonly', SecretReference: secretFile('mailonly.key', keys.mailonly), Lifetime: 'NoLimit' }, Permissions: ['service.mail.read'] },
      ],
      RateLimiting: { TokenCapacity: 10_000, TokensPerReplenishmentPeriod: 10_000 },
    },
    AdminEndpoint: adminEndpointSection(dir, 0, { operator: keys.operator, reader: keys.reader, nothing: keys.nothing }),
    Telemetry: options.telemetry,
  };
  const daemon = spawnDaemon(['--config', writeConfig(dir, config)], { env: { ...HERMETIC_OTEL_ENV, ...options.env } });
  let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  const stop = (): Promise<{ code: number | null; signal: NodeJS.Signals | null }> => {
    exit ??= (async () => {
      if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGTERM');
      const timer = setTimeout(() => daemon.child.kill('SIGKILL'), 15_000);
      try {
        return await daemon.exited;
      } finally {
        clearTimeout(timer);
      }
    })();
    return exit;
  };
  t.teardown(stop);

  let healthPort: number;
  let adminPort: number;
  try {
    healthPort = await listenerPort(daemon, 'HealthEndpoints', 60_000);
    adminPort = await listenerPort(daemon, 'AdminEndpoint', 60_000);
    await listenerPort(daemon, 'McpEndpoint', 60_000);
    await waitReady(healthPort, daemon);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nstderr:\n${daemon.stderr().slice(-4_000)}\nstdout:\n${daemon.stdout().slice(-4_000)}`);
  }

  const mirrored = (alias: FolderAlias): number => {
    try {
      return readMirror(database, ACCOUNT, alias).length;
    } catch {
      return 0; // not created or migrated yet
    }
  };

  return {
    daemon,
    dir,
    database,
    dovecot,
    placed,
    mcpPort,
    adminPort,
    healthPort,
    keys,
    secrets,
    mirrored,
    async waitMirrored(timeoutMs = 120_000) {
      const end = Date.now() + timeoutMs;
      while ((Object.keys(FOLDERS) as FolderAlias[]).some((alias) => mirrored(alias) !== placed[alias])) {
        if (Date.now() > end) throw new Error(`the mirror did not reach ${JSON.stringify(placed)} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async mcp(name) {
      const client = new Client({ name: 'telemetry-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keys[name]}` } } }),
      );
      t.teardown(() => client.close());
      return {
        call: async (tool, args) => (await client.callTool({ name: tool, arguments: args })) as CallToolResult,
        async callRefused(tool, args) {
          try {
            await client.callTool({ name: tool, arguments: args });
          } catch (e) {
            return (e as { code?: number }).code ?? Number.NaN;
          }
          throw new Error(`${tool} was answered, not refused`);
        },
      };
    },
    admin: (path, name, init = {}) => adminCall(`http://127.0.0.1:${adminPort}${path}`, { apiKey: keys[name], ...init }),
    stop,
  };
}

async function waitReady(port: number, daemon: Pick<Daemon, 'exited'>): Promise<void> {
  let gone = false;
  void daemon.exited.then(() => (gone = true));
  for (const end = Date.now() + 60_000; Date.now() < end && !gone; ) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(gone ? 'the daemon exited before it was ready' : 'the daemon did not become ready within 60 s');
}

/** The error log lines of the daemon's stdout (level 50 and up). */
export function errorLines(daemon: Pick<Daemon, 'lines'>): Array<Record<string, unknown>> {
  return daemon.lines().filter((l) => typeof l.level === 'number' && l.level >= 50);
}
