/**
 * The packed package end to end, as an operator runs it (.ci/pack-check,
 * issue 26): `node --import tsx test/dev/packed-e2e.ts APP_DIR`, where APP_DIR
 * is an empty project into which the tarball was installed with
 * `--omit=dev`. Against a private Dovecot and an SMTP sink (this repository's
 * harness), the packed `mailcairnd` mirrors a small mailbox, and through the
 * MCP SDK's client an agent searches, sets flags (applied on the server),
 * sends, replies and forwards (each delivered once, the forward with the
 * original's attachment byte for byte); the packed `mailcairn` signs in and
 * reads the mirror's status. Exit 0 when every step worked; otherwise one
 * line saying which step failed and why, and exit 1.
 *
 * The harness and the MCP client come from this checkout's development
 * install; only the service and the operator client come from APP_DIR.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { simpleParser } from 'mailparser';
import { mailAdmin } from '../harness/doveadm.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { generateMailbox } from '../harness/generator.ts';
import { appendMessages } from '../harness/place-mail.ts';
import { startSmtpServer } from '../harness/smtp-server.ts';
import { listenerPort, spawnDaemon } from '../helpers/daemon.ts';

type Json = Record<string, any>;

const app = process.argv[2] ?? '';
if (app === '') {
  process.stderr.write('usage: node --import tsx test/dev/packed-e2e.ts APP_DIR (an --omit=dev install of the packed tarball)\n');
  process.exit(2);
}
const bin = join(app, 'node_modules', '.bin');
const OWNER = 'pat.owner@example.org';
const SUBJECT = 'Quarterly lighthouse inspection schedule';
const attachment = randomBytes(20_000);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** The message the agent finds, replies to and forwards: a Reply-To, threading headers and one attachment. */
function original(): Buffer {
  const boundary = 'b-packed-check';
  return Buffer.from(
    [
      'From: Quentin Keeper <quentin.keeper@example.net>',
      'Reply-To: Harbour Desk <harbour.desk@example.net>',
      `To: Pat Owner <${OWNER}>`,
      `Subject: ${SUBJECT}`,
      'Message-ID: <lighthouse-2@example.net>',
      'References: <lighthouse-1@example.net>',
      'Date: Mon, 16 Nov 2026 09:30:00 +0000',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'The lighthouse inspection moves to Thursday; the schedule is attached.',
      `--${boundary}`,
      'Content-Type: application/octet-stream; name="schedule.bin"',
      'Content-Disposition: attachment; filename="schedule.bin"',
      'Content-Transfer-Encoding: base64',
      '',
      attachment.toString('base64').replace(/(.{76})/g, '$1\r\n'),
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  );
}

let step = 'starting';
const cleanups: Array<() => unknown> = [];
const log = (line: string): void => void process.stdout.write(`-- packed-e2e: ${line}\n`);

function run(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { env: { ...process.env, ...options.env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(options.input ?? '');
  });
}

async function eventually<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > end) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-packed-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const secret = (name: string, value: string): string => {
    writeFileSync(join(dir, name), value, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };

  step = 'Dovecot and the SMTP sink';
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  cleanups.push(() => dovecot.stop());
  const imap = mailAdmin(dovecot);
  await imap.createMailbox('pat', 'Sent');
  await imap.createMailbox('pat', 'Drafts');
  const generated = [...generateMailbox({ seed: 26, count: 20, profile: 'small' })].map((m) => ({ raw: m.raw }));
  await appendMessages(dovecot, 'pat', 'INBOX', [...generated, { raw: original() }]);
  const smtp = await startSmtpServer({ security: 'None' });
  cleanups.push(() => smtp.stop());

  step = 'mailcairnd keyring new (packed)';
  const keyRing = join(dir, 'keyring.json');
  const made = await run(join(bin, 'mailcairnd'), ['keyring', 'new', '--out', keyRing]);
  if (made.code !== 0) throw new Error(`exit ${made.code}: ${made.stderr.trim()}`);

  const agentKey = `mc_${randomBytes(16).toString('hex')}`;
  const operatorKey = `mc_${randomBytes(16).toString('hex')}`;
  const config = join(dir, 'mailcairn.json');
  writeFileSync(
    config,
    JSON.stringify({
      HealthEndpoints: { Port: 0 },
      McpEndpoint: {
        Enabled: true,
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: secret('agent.key', agentKey), Lifetime: 'NoLimit' } }],
      },
      AdminEndpoint: {
        Enabled: true,
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'operator', SecretReference: secret('operator.key', operatorKey), Lifetime: 'NoLimit' } }],
      },
      Accounts: [
        {
          Id: 'pat',
          Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'pat', Password: secret('imap.password', 'pw-pat') },
          Smtp: { Host: smtp.host, Port: smtp.port, Security: 'None', Username: 'pat', From: OWNER },
          Folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Sent' }, { Alias: 'drafts', Path: 'Drafts' }],
        },
      ],
      Storage: { Database: join(dir, 'mailcairn.db') },
      DataEncryption: { KeyRing: `file:${keyRing}` },
      Logging: { Level: 'info', Format: 'Json' },
    }),
  );

  step = 'mailcairnd starts (packed)';
  const daemon = spawnDaemon(['--config', config], { compiled: join(app, 'node_modules', 'mailcairn', 'dist', 'bin', 'mailcairnd.js'), cwd: app });
  cleanups.push(() => daemon.child.kill('SIGKILL'));
  const [mcpPort, adminPort] = [await listenerPort(daemon, 'McpEndpoint'), await listenerPort(daemon, 'AdminEndpoint')];
  const client = new Client({ name: 'packed-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${agentKey}` } } }),
  );
  cleanups.push(() => client.close());
  const call = async (name: string, args: Json): Promise<Json> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
    if (result.isError) throw new Error(`${name} answered an error: ${text}`);
    return (result.structuredContent ?? {}) as Json;
  };

  step = 'the first mirror';
  await eventually('the mirror of 21 messages', async () => {
    const listed = await call('list_emails', { folders: ['inbox'], pageSize: 50 });
    return (listed.emails as Json[]).length === generated.length + 1 ? true : null;
  });

  step = 'search_emails';
  const found = await call('search_emails', { queryText: 'lighthouse inspection', resultLimit: 5 });
  const hit = (found.matches as Json[])[0];
  if (!hit?.storedEmailId) throw new Error(`the original was not found: ${JSON.stringify(found).slice(0, 300)}`);
  const id = hit.storedEmailId as string;
  log(`search found the original (${id})`);

  step = 'set_mail_flags';
  await call('set_mail_flags', { storedEmailId: id, flagged: true, requestId: 'packed-flag' });
  await eventually('the flag on the server', async () => {
    const messages = await imap.fetchAll('pat', 'INBOX');
    return messages.some((m) => m.flags.includes('\\Flagged')) ? true : null;
  });
  log('set_mail_flags reached the server');

  const settled = (outgoingEmailId: string): Promise<Json> =>
    eventually(`${outgoingEmailId} sent`, async () => {
      const state = await call('get_outgoing_email', { outgoingEmailId });
      if (state.state === 'failed' || state.state === 'cancelled') throw new Error(`${outgoingEmailId} ended ${state.state}`);
      return state.state === 'sent' ? state : null;
    });

  step = 'send_email';
  const sent = await call('send_email', {
    account: 'pat',
    to: ['new.contact@example.com'],
    subject: 'Hello',
    plainTextBody: 'A new message.',
    idempotencyKey: 'p1',
  });
  await settled(sent.outgoingEmailId);

  step = 'reply_to_email';
  const replied = await call('reply_to_email', { storedEmailId: id, audience: 'senderOnly', plainTextBody: 'Thursday suits me.', idempotencyKey: 'p2' });
  await settled(replied.outgoingEmailId);
  const [reply] = smtp.deliveriesFor('harbour.desk@example.net');
  if (!reply) throw new Error('the reply did not reach the Reply-To address');
  const parsedReply = await simpleParser(reply.raw);
  if (parsedReply.subject !== `Re: ${SUBJECT}` || parsedReply.inReplyTo !== '<lighthouse-2@example.net>')
    throw new Error(`the reply's subject or threading is wrong: ${parsedReply.subject} / ${parsedReply.inReplyTo}`);

  step = 'forward_email';
  const forwarded = await call('forward_email', { storedEmailId: id, to: ['forward.target@example.org'], plainTextBody: 'FYI.', idempotencyKey: 'p3' });
  await settled(forwarded.outgoingEmailId);
  const [forward] = smtp.deliveriesFor('forward.target@example.org');
  if (!forward) throw new Error('the forward was not delivered');
  const parsedForward = await simpleParser(forward.raw);
  if (parsedForward.attachments.length !== 1 || sha(parsedForward.attachments[0]!.content) !== sha(attachment))
    throw new Error("the forward does not carry the original's attachment byte for byte");
  if (smtp.deliveries.length !== 3) throw new Error(`${smtp.deliveries.length} deliveries, wanted 3`);
  log('send_email, reply_to_email and forward_email each delivered once');

  step = 'mailcairn login and status (packed)';
  const home = { HOME: dir, XDG_CONFIG_HOME: join(dir, 'client') };
  const login = await run(join(bin, 'mailcairn'), ['login', '--endpoint', `http://127.0.0.1:${adminPort}`, '--name', 'packed'], {
    env: home,
    input: operatorKey,
  });
  if (login.code !== 0) throw new Error(`login exit ${login.code}: ${login.stderr.trim()}`);
  const status = await run(join(bin, 'mailcairn'), ['status'], { env: home });
  if (status.code !== 0) throw new Error(`status exit ${status.code}: ${status.stderr.trim()}`);
  log('mailcairn login and status worked');

  step = 'mailcairnd stops on SIGTERM';
  await client.close();
  daemon.child.kill('SIGTERM');
  const exit = await daemon.exited;
  if (exit.code !== 0) throw new Error(`exit ${exit.code ?? exit.signal}`);
  const failures = daemon.lines().filter((l) => (l.level as number) >= 50);
  if (failures.length > 0) throw new Error(`the service logged ${failures.length} errors, first: ${JSON.stringify(failures[0]).slice(0, 300)}`);
}

let code = 0;
try {
  await main();
  log('ok');
} catch (err) {
  process.stdout.write(`packed-e2e failed at "${step}": ${err instanceof Error ? err.message : String(err)}\n`);
  code = 1;
}
for (const cleanup of cleanups.reverse()) {
  try {
    await cleanup();
  } catch {
    // cleaning up after a failure must not hide it
  }
}
process.exit(code);
