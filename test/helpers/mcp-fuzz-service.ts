/**
 * The service the MCP fuzz families run against (test/fuzz/mcp-*.test.ts):
 * started for real in process, mirroring a tiny mailbox of a private
 * Dovecot (three messages: plain, non-ASCII, with an attachment) so the
 * read tools really read, `/mcp` with every tool category and the
 * unauthenticated posture (every caller holds every permission: all tools
 * are listed and callable), the limiter raised so it never answers for the
 * input. The account's SMTP server is a loopback port nothing listens on:
 * drafts and sends are recorded, and the outbox delivers nowhere (each
 * attempt is refused by the closed port). Requests go out through one
 * undici pool of a few kept-alive connections.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { Pool } from 'undici';
import { startDovecot } from '../harness/dovecot.ts';
import { appendMessages } from '../harness/place-mail.ts';
import { tempDir } from './daemon.ts';
import { reservePort } from './ports.ts';
import { startSyncService, type SyncService } from './sync-service.ts';

export type McpFuzzService = {
  sync: SyncService;
  /** POSTs `body` to /mcp with the headers a client sends (JSON in, JSON or event stream accepted); the status and the body's text. */
  post(body: string | Buffer): Promise<{ status: number; text: string }>;
  /** POSTs JSON to the admin API (behind an API key holding every permission). */
  adminPost(path: string, body: string): Promise<{ status: number; text: string }>;
};

const LIMITS = { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000, MaxConcurrentRequests: 200, ConcurrencyQueueLimit: 1_000 };

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function message(subject: string, body: string, attachment = false): string {
  const boundary = `b-${randomUUID()}`;
  const head = [
    'From: Finance Desk <finance@corp.example>',
    'To: Rita <rita@example.org>, Team <team@example.org>',
    `Subject: ${subject}`,
    `Message-ID: <${randomUUID()}@corp.example>`,
    'Date: Mon, 02 Jun 2025 10:00:00 +0000',
    'MIME-Version: 1.0',
  ];
  if (!attachment) return [...head, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', body, ''].join('\r\n');
  return [
    ...head,
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    `--${boundary}`,
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 quarterly report '.repeat(20)).toString('base64'),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

export async function startMcpFuzzService(t: Test): Promise<McpFuzzService> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'rita', password: 'pw-rita' }] });
  t.teardown(() => dovecot.stop());
  await appendMessages(dovecot, 'rita', 'INBOX', [
    { raw: message('Quarterly budget report', 'Please find the budget numbers attached.', true) },
    { raw: message('Lunch on Friday', 'We discussed the budget over lunch.') },
    { raw: message('=?UTF-8?Q?R=C3=A9union_=C3=A0_Gen=C3=A8ve?=', 'Réunion mardi prochain, à Genève. 🧾') },
  ]);
  const adminKey = `mc_${randomUUID().replaceAll('-', '')}`;
  const adminKeyFile = join(dir, 'admin.key');
  writeFileSync(adminKeyFile, adminKey, { mode: 0o600 });
  // Reserved and released: nothing listens there, so no message leaves.
  const closedSmtpPort = await reservePort();
  const smtp = { Host: '127.0.0.1', Port: closedSmtpPort, Security: 'None', Username: 'rita', From: 'rita@example.org' };
  const sync = await startSyncService(dir, dovecot, [{ id: 'rita', user: 'rita', folders: [{ Alias: 'inbox' }], smtp }], {
    McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0, RateLimiting: LIMITS },
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'operator', SecretReference: `file:${adminKeyFile}`, Lifetime: 'NoLimit' } }],
    },
    MailSynchronization: { Enabled: true, Interval: '01:00:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow('rita', 60_000);
  const pool = new Pool(`http://127.0.0.1:${sync.service.mcp!.port}`, { connections: 4 });
  t.teardown(() => pool.close());
  const admin = new Pool(`http://127.0.0.1:${sync.service.admin!.port}`, { connections: 1 });
  t.teardown(() => admin.close());
  return {
    sync,
    async post(body) {
      const answer = await pool.request({ path: '/mcp', method: 'POST', headers: HEADERS, body });
      return { status: answer.statusCode, text: await answer.body.text() };
    },
    async adminPost(path, body) {
      const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
      const answer = await admin.request({ path: `/api/admin${path}`, method: 'POST', headers, body });
      return { status: answer.statusCode, text: await answer.body.text() };
    },
  };
}

/** Runs `work` over `items`, at most `width` at once. */
export async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

/**
 * Whether `text` is a well-formed JSON-RPC 2.0 answer (one, or a batch of
 * them): `jsonrpc` "2.0", an `id` (string, number or null), exactly one of
 * `result` and `error`, an error with an integer code and a message. The
 * codes found, for the tally: a tool's five-digit code for an `isError`
 * result, the JSON-RPC code of an error, else 'result'.
 */
export function jsonRpcAnswer(text: string): { wellFormed: boolean; codes: Array<number | 'result'> } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { wellFormed: false, codes: [] };
  }
  const answers = Array.isArray(value) ? value : [value];
  if (answers.length === 0) return { wellFormed: false, codes: [] };
  const codes: Array<number | 'result'> = [];
  for (const a of answers) {
    if (typeof a !== 'object' || a === null || Array.isArray(a)) return { wellFormed: false, codes };
    const answer = a as Record<string, unknown>;
    if (answer.jsonrpc !== '2.0') return { wellFormed: false, codes };
    if (!('id' in answer) || !(typeof answer.id === 'string' || typeof answer.id === 'number' || answer.id === null)) return { wellFormed: false, codes };
    if ('result' in answer === 'error' in answer) return { wellFormed: false, codes };
    if ('error' in answer) {
      const error = answer.error as Record<string, unknown> | null;
      if (typeof error !== 'object' || error === null || !Number.isInteger(error.code) || typeof error.message !== 'string')
        return { wellFormed: false, codes };
      codes.push(error.code as number);
    } else {
      const result = answer.result as Record<string, unknown> | null;
      if (typeof result !== 'object' || result === null) return { wellFormed: false, codes };
      const structured = result.structuredContent as Record<string, unknown> | undefined;
      codes.push(result.isError === true && typeof structured?.code === 'number' ? structured.code : 'result');
    }
  }
  return { wellFormed: true, codes };
}
