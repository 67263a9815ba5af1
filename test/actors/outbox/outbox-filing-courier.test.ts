/**
 * Outbox filing on the third real server, Courier: the account maps only
 * `inbox`, so the sent copy and the draft go to the folders found by their
 * names (`INBOX.Sent`, `INBOX.Drafts`; Courier has no SPECIAL-USE, imapflow
 * names them). A Sent send is appended once with \Seen; a draft is filed
 * with \Draft, replaced on update (the old copy removed by UID EXPUNGE,
 * UIDPLUS) and removed once `send_draft` is Sent. Real SMTP (smtp-server),
 * the MCP SDK's own client.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t, { type Test } from 'tap';
import { courierAvailable, startCourier, type Courier } from '../../harness/courier.ts';
import type { ServerMessage } from '../../harness/doveadm.ts';
import { imapAdmin } from '../../harness/imap-admin.ts';
import { startSmtpServer, type SmtpSink } from '../../harness/smtp-server.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { reservePort } from '../../helpers/ports.ts';
import { startSyncService } from '../../helpers/sync-service.ts';
import { AGENT_KEY, call, SENDER, SMTP_LOGIN, settled, sleep } from './outbox-setup.ts';

t.setTimeout(240_000);

const skip = !courierAvailable() && 'Courier is not installed (see .ci/run)';
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function start(t: Test): Promise<{ courier: Courier; smtp: SmtpSink; agent: Client }> {
  const dir = tempDir(t);
  const courier = await startCourier({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => courier.stop());
  const smtp = await startSmtpServer({ security: 'StartTls', auth: SMTP_LOGIN, port: await reservePort() });
  t.teardown(() => smtp.stop());
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const sync = await startSyncService(
    dir,
    courier,
    [
      {
        id: 'ann',
        user: 'ann',
        folders: [{ Alias: 'inbox' }],
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
    ],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: file('agent.key', AGENT_KEY), Lifetime: 'NoLimit' } }],
        RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
      },
      MailSynchronization: { Interval: '01:00:00' },
      Outbox: { RetryDelay: '00:00:01', SendTimeout: '00:00:03' },
    },
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('ann');
  const agent = new Client({ name: 'outbox-courier-test', version: '1.0.0' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${AGENT_KEY}` } },
    }),
  );
  t.teardown(() => agent.close());
  return { courier, smtp, agent };
}

/** Poll a Courier folder until `check` holds (bounded). */
async function folderUntil(courier: Courier, folder: string, check: (messages: ServerMessage[]) => boolean, what: string): Promise<ServerMessage[]> {
  const until = Date.now() + 20_000;
  let last: ServerMessage[] = [];
  while (Date.now() < until) {
    last = await imapAdmin(courier).fetchAll('ann', folder);
    if (check(last)) return last;
    await sleep(200);
  }
  throw new Error(`${folder}: ${what} never held (${last.length} messages)`);
}

t.test('Courier: a Sent send is appended to INBOX.Sent once, with \\Seen', { skip }, async (t) => {
  const { courier, smtp, agent } = await start(t);
  const sent = await call(agent, 'send_email', {
    account: 'ann',
    to: ['copy.reader@example.org'],
    subject: 'Filed on Courier',
    plainTextBody: 'x',
    idempotencyKey: 'c1',
  });
  t.ok(sent.ok, sent.text);
  await settled(agent, sent.value.outgoingEmailId, ['sent']);
  await smtp.waitForDeliveries(1, 10_000);
  const [copy] = await folderUntil(courier, 'INBOX.Sent', (m) => m.length > 0, 'a copy');
  t.equal(copy!.sha256, sha(smtp.deliveries[0]!.raw), 'the copy is the message sent, byte for byte');
  t.ok(copy!.flags.includes('\\Seen'), 'with \\Seen');
  await sleep(2_000);
  t.equal((await imapAdmin(courier).fetchAll('ann', 'INBOX.Sent')).length, 1, 'appended once');
});

t.test('Courier: a draft filed in INBOX.Drafts with \\Draft, replaced on update, removed once sent', { skip }, async (t) => {
  const { courier, smtp, agent } = await start(t);
  const saved = await call(agent, 'save_draft', { account: 'ann', subject: 'Draft one', to: ['draft.reader@example.org'], plainTextBody: 'first words' });
  t.ok(saved.ok, saved.text);
  const first = await folderUntil(courier, 'INBOX.Drafts', (m) => m.length === 1, 'the first revision');
  t.ok(first[0]!.flags.includes('\\Draft'), 'filed with \\Draft');

  const updated = await call(agent, 'update_draft', {
    draftId: saved.value.draftId,
    account: 'ann',
    subject: 'Draft two',
    to: ['draft.reader@example.org'],
    plainTextBody: 'second words',
  });
  t.match(updated.value, { revision: 2 });
  const second = await folderUntil(courier, 'INBOX.Drafts', (m) => m.length === 1 && m[0]!.uid > first[0]!.uid, 'only the second revision');
  t.not(second[0]!.sha256, first[0]!.sha256, 'the new revision replaced the old one');

  const sent = await call(agent, 'send_draft', { draftId: saved.value.draftId });
  t.ok(sent.ok, sent.text);
  await settled(agent, sent.value.outgoingEmailId, ['sent']);
  await smtp.waitForDeliveries(1, 10_000);
  t.equal(sha(smtp.deliveries[0]!.raw), second[0]!.sha256, "the draft's exact message went out");
  await folderUntil(courier, 'INBOX.Drafts', (m) => m.length === 0, 'the draft removed');
  await folderUntil(courier, 'INBOX.Sent', (m) => m.length === 1, 'the sent copy');
});
