/**
 * A service that sends: a private Dovecot (account `ann`, folders inbox,
 * sent and drafts), a real SMTP server (smtp-server, StartTls + AUTH) and
 * the service in-process with the MCP endpoint and the admin endpoint; the
 * MCP SDK's own client. Shared by the outbox tests.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Test } from 'tap';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { startSmtpServer, type SmtpServerOptions, type SmtpSink } from '../../harness/smtp-server.ts';
import { reservePort } from '../../helpers/ports.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { adminEndpointSection } from '../../helpers/admin-client.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

export type Json = Record<string, any>;
export const AGENT_KEY = 'key-agent-0123456789abcdef';
export const OTHER_KEY = 'key-other-0123456789abcdef';
export const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
export const SENDER = 'ann.owner@example.org';
export const SMTP_LOGIN = { username: 'ann-smtp', password: 'smtp-secret-pw' };

export type Outboxed = {
  dir: string;
  dovecot: Dovecot;
  smtp: SmtpSink;
  sync: SyncService;
  agent: Client;
  other: Client;
  adminPort(): number;
  /** Stop the service and start it again on the same database and configuration. */
  restart(): Promise<void>;
};

export type OutboxOptions = {
  outbox?: Record<string, unknown>;
  smtp?: Partial<SmtpServerOptions>;
  /** Messages placed in INBOX before the first run. */
  inbox?: Buffer[];
};

export async function startOutboxed(t: Test, options: OutboxOptions = {}): Promise<Outboxed> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await admin.createMailbox('ann', 'Sent');
  await admin.createMailbox('ann', 'Drafts');
  if (options.inbox?.length)
    await appendMessages(
      dovecot,
      'ann',
      'INBOX',
      options.inbox.map((raw) => ({ raw })),
    );
  const smtp = await startSmtpServer({ security: 'StartTls', auth: SMTP_LOGIN, port: await reservePort(), ...options.smtp });
  t.teardown(() => smtp.stop());
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const accounts = [
    {
      id: 'ann',
      user: 'ann',
      folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Sent' }, { Alias: 'drafts', Path: 'Drafts' }],
      smtp: {
        Host: '127.0.0.1',
        Port: smtp.port,
        Security: smtp.security,
        Username: SMTP_LOGIN.username,
        Password: file('smtp.password', SMTP_LOGIN.password),
        ...(smtp.certificatePem ? { TrustedCertificate: file('smtp.ca.pem', smtp.certificatePem) } : {}),
        From: SENDER,
      },
    },
  ];
  const extra = {
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'agent', SecretReference: file('agent.key', AGENT_KEY), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'other-agent', SecretReference: file('other.key', OTHER_KEY), Lifetime: 'NoLimit' } },
      ],
      RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
    },
    AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS),
    MailSynchronization: { Interval: '01:00:00' },
    Outbox: { RetryDelay: '00:00:01', SendTimeout: '00:00:03', ...options.outbox },
  };
  const clients: Client[] = [];
  const connect = async (sync: SyncService, secret: string): Promise<Client> => {
    const client = new Client({ name: 'outbox-test', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    clients.push(client);
    return client;
  };
  const state = {} as Outboxed;
  const boot = async (): Promise<void> => {
    const sync = await startSyncService(dir, dovecot, accounts, extra);
    await sync.syncNow('ann');
    Object.assign(state, { sync, agent: await connect(sync, AGENT_KEY), other: await connect(sync, OTHER_KEY) });
  };
  await boot();
  t.teardown(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await state.sync.service.stop();
  });
  Object.assign(state, {
    dir,
    dovecot,
    smtp,
    adminPort: () => state.sync.service.admin!.port,
    async restart() {
      await Promise.allSettled(clients.splice(0).map((c) => c.close()));
      await state.sync.service.stop();
      await boot();
    },
  });
  return state;
}

export async function call(client: Client, name: string, args: Json): Promise<{ ok: boolean; value: Json; text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
  return { ok: result.isError !== true, value: (result.structuredContent ?? {}) as Json, text };
}

/** Poll `get_outgoing_email` until the send reaches one of `states` (bounded). */
export async function settled(client: Client, id: string, states: readonly string[], timeoutMs = 20_000): Promise<Json> {
  const until = Date.now() + timeoutMs;
  let last: Json = {};
  while (Date.now() < until) {
    const { value } = await call(client, 'get_outgoing_email', { outgoingEmailId: id });
    last = value;
    if (states.includes(value.state)) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`send ${id} stayed ${last.state} (wanted ${states.join(' or ')})`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
