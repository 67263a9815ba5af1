/**
 * Freshness in every mapped folder (issue 12, part 1): with a one-hour
 * Interval, changes made on the server behind the service's back — new mail
 * in a second and a third folder, a flag and a keyword, an expunge, a flag in
 * INBOX — reach `list_emails` through the MCP SDK client within seconds, on
 * Dovecot and on Cyrus. On Courier (no CONDSTORE: STATUS cannot tell a flag
 * change in a folder that is not selected) new mail, expunges and INBOX's
 * flags show within seconds, and a flag change in another folder rides with
 * the next run any change wakes. And a change landing in a folder a running
 * run has already passed is not lost.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t, { type Test } from 'tap';
import { courierAvailable, startCourier } from '../../harness/courier.ts';
import { cyrusAvailable, startCyrus } from '../../harness/cyrus.ts';
import { type MailAdmin, mailAdmin } from '../../harness/doveadm.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { imapAdmin } from '../../harness/imap-admin.ts';
import type { ImapPeer } from '../../harness/imap-client.ts';
import { appendMessages, writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { reservePort } from '../../helpers/ports.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

/** How long a poll waits for a change to show: the goal is 10 s at p95; this bound only keeps the test from hanging. */
const BOUND_MS = 15_000;

type Summary = { storedEmailId: string; subject?: string; flags?: string[]; keywords?: string[] };

function message(tag: string): string {
  return [
    `From: Fresh ${tag} <fresh-${tag}@example.org>`,
    'To: Alice <alice@example.org>',
    `Subject: Freshness ${tag}`,
    `Message-ID: <fresh-${tag}@example.org>`,
    'Date: Mon, 2 Nov 2026 10:00:00 +0000',
    '',
    `Body ${tag}`,
    '',
  ].join('\r\n');
}

const FOLDERS = [{ Alias: 'inbox' }, { Alias: 'projects', Path: 'Projects' }, { Alias: 'receipts', Path: 'Receipts' }];

async function serve(t: Test, server: ImapPeer, user: string, folders = FOLDERS): Promise<{ sync: SyncService; client: Client }> {
  const dir = tempDir(t);
  const port = await reservePort();
  const sync = await startSyncService(dir, server, [{ id: user, user, folders }], {
    McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: port, RateLimiting: { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000 } },
    Deployment: { PublicBaseAddress: `http://127.0.0.1:${port}` },
    // Only the change watch can make a change show within the test: the interval is an hour.
    MailSynchronization: { Interval: '01:00:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow(user);
  const client = new Client({ name: 'freshness-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  t.teardown(() => client.close());
  return { sync, client };
}

async function list(client: Client, folder: string): Promise<Summary[]> {
  const result = (await client.callTool({ name: 'list_emails', arguments: { folders: [folder], pageSize: 100 } })) as CallToolResult;
  if (result.isError) throw new Error(`list_emails refused: ${JSON.stringify(result.structuredContent)}`);
  return (result.structuredContent as { emails: Summary[] }).emails;
}

/** Poll `list_emails` until `seen` holds; returns the milliseconds it took (fails the test past the bound). */
async function visible(t: Test, client: Client, folder: string, what: string, seen: (emails: Summary[]) => boolean): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < BOUND_MS) {
    if (seen(await list(client, folder))) {
      const ms = Date.now() - start;
      t.pass(`${what}: visible through list_emails after ${ms} ms`);
      return ms;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  t.fail(`${what}: not visible through list_emails within ${BOUND_MS} ms`);
  return Number.POSITIVE_INFINITY;
}

const bySubject = (emails: Summary[], tag: string): Summary | undefined => emails.find((e) => e.subject === `Freshness ${tag}`);

async function everyFolder(t: Test, server: ImapPeer, admin: MailAdmin, user: string): Promise<void> {
  await admin.createMailbox(user, 'Projects');
  await admin.createMailbox(user, 'Receipts');
  await appendMessages(server, user, 'INBOX', [{ raw: message('i1') }, { raw: message('i2') }]);
  const projects = await appendMessages(server, user, 'Projects', [{ raw: message('p1') }, { raw: message('p2') }]);
  const receipts = await appendMessages(server, user, 'Receipts', [{ raw: message('r1') }, { raw: message('r2') }]);
  const { client } = await serve(t, server, user);
  t.equal((await list(client, 'receipts')).length, 2, 'the first run mirrored the third folder');

  await appendMessages(server, user, 'Projects', [{ raw: message('p3') }]);
  await visible(t, client, 'projects', 'new mail in the second folder', (e) => bySubject(e, 'p3') !== undefined);

  await appendMessages(server, user, 'Receipts', [{ raw: message('r3') }]);
  await visible(t, client, 'receipts', 'new mail in the third folder', (e) => bySubject(e, 'r3') !== undefined);

  await admin.addFlags(user, 'Projects', [projects[0]!], ['\\Flagged', 'Urgent']);
  await visible(t, client, 'projects', '\\Flagged and a keyword in the second folder', (e) => {
    const m = bySubject(e, 'p1');
    return Boolean(m?.flags?.includes('\\Flagged') && m.keywords?.some((k) => k.toLowerCase() === 'urgent'));
  });

  await admin.expunge(user, 'Receipts', [receipts[0]!]);
  await visible(t, client, 'receipts', 'an expunge in the third folder', (e) => bySubject(e, 'r1') === undefined && e.length === 2);

  const inbox = await list(client, 'inbox');
  t.equal(inbox.length, 2);
  await admin.addFlags(user, 'INBOX', [1], ['\\Flagged']);
  await visible(t, client, 'inbox', '\\Flagged in INBOX (the watched folder)', (e) => bySubject(e, 'i1')?.flags?.includes('\\Flagged') === true);

  await admin.removeFlags(user, 'Projects', [projects[0]!], ['\\Flagged', 'Urgent']);
  await visible(t, client, 'projects', 'the flag and keyword cleared in the second folder', (e) => {
    const m = bySubject(e, 'p1');
    return m !== undefined && !m.flags?.includes('\\Flagged') && !m.keywords?.length;
  });
}

t.test('Dovecot: every change in every mapped folder shows within seconds, with a one-hour interval', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'alice', password: 'pw-alice' }] });
  t.teardown(() => dovecot.stop());
  await everyFolder(t, dovecot, mailAdmin(dovecot), 'alice');
});

t.test('Cyrus: the same', { skip: !cyrusAvailable() && 'Cyrus is not installed (see .ci/run)' }, async (t) => {
  const cyrus = await startCyrus({ users: [{ user: 'carol', password: 'pw-carol' }] });
  t.teardown(() => cyrus.stop());
  await everyFolder(t, cyrus, imapAdmin(cyrus), 'carol');
});

t.test(
  "Courier: new mail, expunges and INBOX flags within seconds; another folder's flags with the next run",
  { skip: !courierAvailable() && 'Courier is not installed (see .ci/run)' },
  async (t) => {
    const courier = await startCourier({ users: [{ user: 'dora', password: 'pw-dora' }] });
    t.teardown(() => courier.stop());
    const admin = imapAdmin(courier);
    const user = 'dora';
    await admin.createMailbox(user, 'INBOX.Projects');
    await admin.createMailbox(user, 'INBOX.Receipts');
    await appendMessages(courier, user, 'INBOX', [{ raw: message('i1') }, { raw: message('i2') }]);
    const projects = await appendMessages(courier, user, 'INBOX.Projects', [{ raw: message('p1') }, { raw: message('p2') }]);
    const receipts = await appendMessages(courier, user, 'INBOX.Receipts', [{ raw: message('r1') }, { raw: message('r2') }]);
    const { client } = await serve(t, courier, user, [
      { Alias: 'inbox' },
      { Alias: 'projects', Path: 'INBOX.Projects' },
      { Alias: 'receipts', Path: 'INBOX.Receipts' },
    ]);
    t.equal((await list(client, 'receipts')).length, 2, 'the first run mirrored the third folder');

    await appendMessages(courier, user, 'INBOX.Projects', [{ raw: message('p3') }]);
    await visible(t, client, 'projects', 'new mail in the second folder', (e) => bySubject(e, 'p3') !== undefined);
    await appendMessages(courier, user, 'INBOX.Receipts', [{ raw: message('r3') }]);
    await visible(t, client, 'receipts', 'new mail in the third folder', (e) => bySubject(e, 'r3') !== undefined);
    await admin.expunge(user, 'INBOX.Receipts', [receipts[0]!]);
    await visible(t, client, 'receipts', 'an expunge in the third folder', (e) => bySubject(e, 'r1') === undefined && e.length === 2);
    await admin.addFlags(user, 'INBOX', [1], ['\\Flagged', 'Urgent']);
    await visible(t, client, 'inbox', '\\Flagged and a keyword in INBOX (the watched folder: NOOP reports it)', (e) => {
      const m = bySubject(e, 'i1');
      return Boolean(m?.flags?.includes('\\Flagged') && m.keywords?.some((k) => k.toLowerCase() === 'urgent'));
    });

    // STATUS without HIGHESTMODSEQ cannot see this one; the run that the next arrival wakes compares every flag.
    await admin.addFlags(user, 'INBOX.Projects', [projects[0]!], ['\\Flagged']);
    await appendMessages(courier, user, 'INBOX', [{ raw: message('i3') }]);
    await visible(t, client, 'inbox', 'new mail in INBOX', (e) => bySubject(e, 'i3') !== undefined);
    await visible(
      t,
      client,
      'projects',
      '\\Flagged in the second folder, with the run the new mail woke',
      (e) => bySubject(e, 'p1')?.flags?.includes('\\Flagged') === true,
    );
  },
);

t.test('a change in a folder the running run has already passed is not lost', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'rob', password: 'pw-rob' }] });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await admin.createMailbox('rob', 'Projects');
  await admin.createMailbox('rob', 'Receipts');
  await appendMessages(dovecot, 'rob', 'INBOX', [{ raw: message('i1') }]);
  const { sync, client } = await serve(t, dovecot, 'rob');

  // Enough new mail in the last folder that the next run spends seconds there, after it has passed INBOX.
  await writeMaildir(
    dovecot,
    'rob',
    'Receipts',
    Array.from({ length: 1_500 }, (_, i) => ({ raw: message(`bulk-${i}`) })),
  );
  const since = Date.now();
  sync.service.supervisor.ref('sync-scheduler').tell({ type: 'sync-scheduler.wake', account: 'rob' });
  let passedInbox = false;
  const deadline = Date.now() + BOUND_MS;
  while (!passedInbox && Date.now() < deadline) {
    const status = await sync.status();
    const account = status.accounts.find((a) => a.account === 'rob');
    const inbox = account?.folders.find((f) => f.alias === 'inbox');
    const receipts = account?.folders.find((f) => f.alias === 'receipts');
    passedInbox =
      account?.phase === 'running' && inbox?.lastRun?.endedAt != null && Date.parse(inbox.lastRun.endedAt) >= since && (receipts?.lastSeenUid ?? 0) < 1_500;
    if (!passedInbox) await new Promise((r) => setTimeout(r, 20));
  }
  t.ok(passedInbox, 'the run is under way in the last folder, INBOX already done');
  await admin.addFlags('rob', 'INBOX', [1], ['\\Flagged']);
  await visible(t, client, 'inbox', 'a flag set in INBOX behind the running run', (e) => bySubject(e, 'i1')?.flags?.includes('\\Flagged') === true);
});
