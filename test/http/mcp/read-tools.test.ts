/**
 * The read tools end to end: the real corpus placed in a private Dovecot,
 * mirrored by the service, read back through the MCP SDK's own client over
 * Streamable HTTP, and checked against what Dovecot holds.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { issueCapability } from '../../../http/attachments/capability.ts';
import { newKeyRing, parseKeyRing } from '../../../runtime/keyring/keyring.ts';
import { corpusAvailable, loadCorpus, withoutEnvelope } from '../../harness/corpus.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { withImap } from '../../harness/imap-client.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { reservePort } from '../../helpers/ports.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

// Real servers and a whole mirror: generous on a loaded machine (CI shares two cores).
t.setTimeout(300_000);

type Json = Record<string, any>;

async function connect(t: Test, port: number): Promise<Client> {
  const client = new Client({ name: 'read-tools-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  t.teardown(() => client.close());
  return client;
}

async function call(client: Client, name: string, args: Json = {}): Promise<{ ok: boolean; value: Json }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { ok: result.isError !== true, value: (result.structuredContent ?? {}) as Json };
}

async function ok(client: Client, name: string, args: Json = {}): Promise<Json> {
  const { ok: fine, value } = await call(client, name, args);
  if (!fine) throw new Error(`${name} refused: ${JSON.stringify(value)}`);
  return value;
}

type Setup = { dovecot: Dovecot; sync: SyncService; port: number; raws: Buffer[]; dir: string };

async function setup(t: Test, options: { messages: Buffer[]; syncEnabled?: boolean }): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'rita', password: 'pw-rita' }] });
  t.teardown(() => dovecot.stop());
  if (options.messages.length > 0)
    await writeMaildir(
      dovecot,
      'rita',
      'INBOX',
      options.messages.map((raw) => ({ raw })),
    );
  // Chosen in advance: Deployment:PublicBaseAddress names it.
  const port = await reservePort();
  writeFileSync(join(dir, 'keyring.json'), newKeyRing());
  const sync = await startSyncService(dir, dovecot, [{ id: 'rita', user: 'rita', folders: [{ Alias: 'inbox' }] }], {
    // Limits are tested on their own (test/http/mcp/pipeline.test.ts); this walks far more than a minute's default budget,
    // and the concurrency test has 24 calls in flight, above the default 20 served at once with no queue.
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: port,
      RateLimiting: { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000, MaxConcurrentRequests: 100 },
    },
    Deployment: { PublicBaseAddress: `http://127.0.0.1:${port}` },
    DataEncryption: { KeyRing: `file:${join(dir, 'keyring.json')}` },
    MailSynchronization: { Enabled: options.syncEnabled ?? true, BatchSize: 500 },
  });
  t.teardown(() => sync.service.stop());
  if (options.syncEnabled !== false) await sync.syncNow('rita', 120_000);
  return { dovecot, sync, port, raws: options.messages, dir };
}

/** Dovecot's own reading of every message: subject and Message-ID by UID, from its ENVELOPE. */
async function serverEnvelopes(dovecot: Dovecot): Promise<Map<string, { subject: string; count: number }>> {
  const byMessageId = new Map<string, { subject: string; count: number }>();
  await withImap(dovecot, 'rita', async (client) => {
    await client.mailboxOpen('INBOX', { readOnly: true });
    for await (const msg of client.fetch('1:*', { uid: true, envelope: true }, { uid: true })) {
      const id = msg.envelope?.messageId;
      if (!id) continue;
      const seen = byMessageId.get(id);
      byMessageId.set(id, { subject: msg.envelope?.subject ?? '', count: (seen?.count ?? 0) + 1 });
    }
  });
  return byMessageId;
}

const realMail = corpusAvailable() ? loadCorpus('real').map((m) => withoutEnvelope(m.raw)) : [];

t.test('the read tools over the real corpus, against what Dovecot holds', { skip: !corpusAvailable() && 'the shared corpus is not present' }, async (t) => {
  const { dovecot, sync, port, raws, dir } = await setup(t, { messages: realMail });
  const client = await connect(t, port);
  const total = raws.length;

  t.test('tools/list publishes the four read tools with the spec annotations', async (t) => {
    const readTools = new Set(['get_email_content', 'list_accounts', 'list_emails', 'search_emails']);
    const tools = (await client.listTools()).tools.filter((tool) => readTools.has(tool.name));
    t.same(tools.map((tool) => tool.name).sort(), ['get_email_content', 'list_accounts', 'list_emails', 'search_emails']);
    for (const tool of tools) t.match(tool.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }, tool.name);
  });

  t.test('list_accounts: the account, its alias, synchronized', async (t) => {
    const { accounts } = await ok(client, 'list_accounts');
    t.equal(accounts.length, 1);
    t.equal(accounts[0].accountId, 'rita');
    t.match(accounts[0].folders, [{ alias: 'inbox', wasSynchronized: true, synchronizedAt: String }]);
  });

  t.test('list_emails: a walk visits every message once, newest first, and ends without a cursor', async (t) => {
    const seen = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    let previous = Infinity;
    let ordered = true;
    do {
      const page = await ok(client, 'list_emails', { pageSize: 100, ...(cursor ? { cursor } : {}) });
      pages += 1;
      for (const email of page.emails) {
        if (seen.has(email.storedEmailId)) t.fail(`${email.storedEmailId} listed twice`);
        seen.add(email.storedEmailId);
        const at = email.receivedAt ? Date.parse(email.receivedAt) : -Infinity;
        if (at > previous) ordered = false;
        previous = at;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined && pages < 200);
    t.equal(seen.size, total, `every one of the ${total} messages Dovecot holds`);
    t.ok(ordered, 'newest first');
    t.equal(pages, Math.ceil(total / 100));
  });

  t.test('a cursor presented with other filters is refused (52002); a made-up one (52001)', async (t) => {
    const first = await ok(client, 'list_emails', { pageSize: 5 });
    const changed = await call(client, 'list_emails', { pageSize: 5, cursor: first.nextCursor, hasAttachments: true });
    t.match(changed, { ok: false, value: { code: 52002 } });
    const pageSizeOnly = await call(client, 'list_emails', { pageSize: 7, cursor: first.nextCursor });
    t.equal(pageSizeOnly.ok, true, 'only pageSize may change');
    t.match(await call(client, 'list_emails', { cursor: 'bm90LWEtY3Vyc29y' }), { ok: false, value: { code: 52001 } });
  });

  t.test('get_email_content agrees with Dovecot on subject and Message-ID', async (t) => {
    const envelopes = await serverEnvelopes(dovecot);
    const page = await ok(client, 'list_emails', { pageSize: 100 });
    const ids = page.emails.slice(0, 40).map((e: Json) => e.storedEmailId);
    let compared = 0;
    for (let i = 0; i < ids.length; i += 10) {
      const { emails } = await ok(client, 'get_email_content', { storedEmailIds: ids.slice(i, i + 10) });
      t.equal(emails.length, Math.min(10, ids.length - i));
      for (const email of emails) {
        if (email.error || !email.messageId) continue;
        const server = envelopes.get(email.messageId);
        // Dovecot shows undeclared 8-bit header bytes as U+FFFD; ours are decoded by charset detection.
        if (!server || server.count > 1 || server.subject.includes('\uFFFD')) continue;
        t.equal((email.subject ?? '').trim(), server.subject.trim(), `subject of ${email.storedEmailId}`);
        t.type(email.body?.text, 'string');
        compared += 1;
      }
    }
    t.ok(compared >= 20, `${compared} emails compared with Dovecot's envelope`);
  });

  t.test('search_emails: a phrase from one message finds it first; 51003 above 50; freshness and mode', async (t) => {
    const page = await ok(client, 'list_emails', { pageSize: 50 });
    // Two neighbouring plain words of a subject: as a phrase they find their message.
    const pairOf = (subject: string): string[] | null => {
      const words = subject.split(/\s+/);
      for (let i = 0; i + 1 < words.length; i++)
        if (/^[A-Za-z]{4,}$/.test(words[i]!) && /^[A-Za-z]{4,}$/.test(words[i + 1]!)) return [words[i]!, words[i + 1]!];
      return null;
    };
    const target = page.emails.find((e: Json) => typeof e.subject === 'string' && pairOf(e.subject) !== null);
    t.ok(target, 'a message with a wordy subject');
    const pair = pairOf(target.subject)!;
    const found = await ok(client, 'search_emails', { queryText: `"${pair.join(' ')}"`, resultLimit: 50 });
    t.ok(
      found.matches.some((m: Json) => m.storedEmailId === target.storedEmailId),
      'the phrase finds its message',
    );
    t.ok(found.matches.length <= 50);
    const words = pair;
    t.equal(found.retrievalMode, 'lexical');
    t.equal(found.semanticSearch, 'inactive');
    t.match(found.folderFreshness, [{ accountId: 'rita', folderAlias: 'inbox', wasSynchronized: true }]);
    t.match(await call(client, 'search_emails', { queryText: words[0], resultLimit: 51 }), { ok: false, value: { code: 51003 } });
    t.match(await call(client, 'search_emails', { queryText: '' }), { ok: false, value: { code: 51001 } });
  });

  t.test('a thread id resolves to the whole conversation', async (t) => {
    const db = new Libsql(sync.database, { readonly: true });
    const row = db
      .prepare(
        "SELECT thread_id AS thread, count(*) AS n FROM messages WHERE state = 'stored' AND thread_id IS NOT NULL GROUP BY thread_id HAVING n BETWEEN 2 AND 10 ORDER BY n DESC LIMIT 1",
      )
      .get() as { thread: string; n: number } | undefined;
    db.close();
    t.ok(row, 'the corpus holds a conversation');
    const { emails } = await ok(client, 'get_email_content', { threadId: row!.thread });
    t.equal(emails.length, row!.n, `all ${row!.n} messages of the thread`);
    t.ok(emails.every((e: Json) => e.threadId === row!.thread));
  });

  t.test("concurrent clients never see each other's answers", async (t) => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => connect(t, port)));
    const page = await ok(client, 'list_emails', { pageSize: 8 });
    const answers = await Promise.all(
      clients.flatMap((c, i) => [0, 1, 2].map(() => ok(c, 'get_email_content', { storedEmailIds: [page.emails[i].storedEmailId] }).then((r) => ({ i, r })))),
    );
    t.ok(
      answers.every(({ i, r }) => r.emails.length === 1 && r.emails[0].storedEmailId === page.emails[i].storedEmailId),
      "each answer is its own request's",
    );
  });

  t.test('55001: damaged content is reported on its entry, with a durable repair request', async (t) => {
    const page = await ok(client, 'list_emails', { pageSize: 3 });
    const [damaged, intact] = page.emails.map((e: Json) => e.storedEmailId);
    const messageId = Number.parseInt(damaged.slice(1), 36);
    const db = new Libsql(sync.database, { timeout: 5_000 });
    db.prepare("UPDATE message_raw SET mime = CAST('damaged' AS BLOB) WHERE message_id = ?").run(messageId);
    const result = await call(client, 'get_email_content', { storedEmailIds: [damaged, intact] });
    t.equal(result.ok, true, 'the call succeeds');
    t.match(result.value.emails[0], { storedEmailId: damaged, error: { code: 55001 } });
    t.equal(result.value.emails[1].storedEmailId, intact);
    t.notOk(result.value.emails[1].error);
    const repairs = db.prepare('SELECT reason FROM repair_requests WHERE message_id = ? AND resolved_at IS NULL').all(messageId) as Array<{ reason: string }>;
    db.close();
    t.same(
      repairs.map((r) => r.reason),
      ['damaged'],
      'one open repair request',
    );
  });

  t.test('unknown tools and bad inputs', async (t) => {
    await t.rejects(client.callTool({ name: 'drop_everything', arguments: {} }), { code: -32602, message: /Unknown tool: 'drop_everything'/ });
    t.match(await call(client, 'list_emails', { pageSize: 0 }), { ok: false, value: { code: 51001, message: /pageSize/ } });
    t.match(await call(client, 'list_emails', { accounts: ['somebody-else'] }), { ok: false, value: { code: 53001 } });
    t.match(await call(client, 'get_email_content', { storedEmailIds: ['e1'], threadId: 'x' }), { ok: false, value: { code: 51001 } });
  });

  t.test('the listener: /api/admin is 404, GET /mcp 405, /readyz ready', async (t) => {
    const base = `http://127.0.0.1:${port}`;
    t.equal((await request(`${base}/api/admin/session`)).statusCode, 404);
    t.equal((await request(`${base}/api/admin`, { method: 'POST', body: '{}' })).statusCode, 404);
    const get = await request(`${base}/mcp`);
    t.equal(get.statusCode, 405);
    t.equal(get.headers.allow, 'POST');
    const ready = await request(`${base}/readyz`);
    t.equal(ready.statusCode, 200);
    t.match(await ready.body.json(), { status: 'ready' });
    const stray = await request(`${base}/nothing-here`);
    t.equal(stray.statusCode, 404);
  });

  t.test('attachment links: a download; expired, forged and orphaned capabilities answer the same 404', async (t) => {
    const page = await ok(client, 'list_emails', { hasAttachments: true, pageSize: 20 });
    t.ok(page.emails.length > 0, 'the corpus has mail with attachments');
    const { emails } = await ok(client, 'get_email_content', { storedEmailIds: page.emails.slice(0, 10).map((e: Json) => e.storedEmailId) });
    const email = emails.find((e: Json) => e.attachments?.some((a: Json) => !a.inline && a.downloadUrl));
    t.ok(email, 'an attachment with a download link');
    const attachment = email.attachments.find((a: Json) => !a.inline && a.downloadUrl);
    t.match(attachment.downloadUrl, new RegExp(`^http://127\\.0\\.0\\.1:${port}/attachments/[A-Za-z0-9_-]+$`), 'under Deployment:PublicBaseAddress');
    const download = await request(attachment.downloadUrl);
    t.equal(download.statusCode, 200);
    t.equal(download.headers['cache-control'], 'no-store');
    const bytes = Buffer.from(await download.body.arrayBuffer());
    t.ok(
      bytes.length > 0 && Math.abs(bytes.length - attachment.sizeBytes) <= Math.max(16, attachment.sizeBytes * 0.05),
      `decoded bytes (${bytes.length}) match the listed size (${attachment.sizeBytes})`,
    );

    const refusal = async (url: string) => {
      const res = await request(url);
      const body = await res.body.text();
      const { date: _date, ...headers } = res.headers;
      return { status: res.statusCode, body, headers };
    };
    const token = attachment.downloadUrl.split('/attachments/')[1] as string;
    const flipped = token.slice(0, 10) + (token[10] === 'A' ? 'B' : 'A') + token.slice(11);
    const forged = await refusal(`http://127.0.0.1:${port}/attachments/${flipped}`);
    const messageId = Number.parseInt(email.storedEmailId.slice(1), 36);
    const expiredToken = issueCapability(
      parseKeyRing(readFileSync(join(dir, 'keyring.json'), 'utf8')),
      { messageId, index: attachment.index, accountId: 'rita' },
      { now: Date.now() - 11 * 60_000 },
    );
    const expired = await refusal(`http://127.0.0.1:${port}/attachments/${expiredToken}`);
    t.equal(forged.status, 404);
    t.same(expired, forged, 'expired and forged read the same');

    // Orphaned: the message is expunged on the server and synchronized away; the live link dies with it.
    const uid = (new Libsql(sync.database, { readonly: true }).prepare('SELECT uid FROM messages WHERE id = ?').get(messageId) as { uid: number }).uid;
    await mailAdmin(dovecot).expunge('rita', 'INBOX', [uid]);
    await sync.syncNow('rita');
    const orphaned = await refusal(attachment.downloadUrl);
    t.same(orphaned, forged, 'orphaned reads the same as forged');
  });

  t.test('no subject, address or capability in any log line; one line per tool call', async (t) => {
    const logs = sync.logs.raw();
    const leaked = sensitiveStrings(raws).filter((s) => logs.includes(s));
    t.same(leaked.slice(0, 5), [], 'no header value of the corpus in the logs');
    t.notMatch(logs, /\/attachments\/[A-Za-z0-9_-]{20,}/, 'no capability');
    const calls = sync.logs.events('mcp.tool-call');
    t.ok(calls.length > 20);
    for (const line of calls)
      t.same(
        Object.keys(line)
          .filter((k) => !['level', 'time', 'pid', 'msg', 'event'].includes(k))
          .sort(),
        line.code === undefined ? ['durationMs', 'isError', 'tool'] : ['code', 'durationMs', 'isError', 'tool'],
      );
  });
});

t.test('a deployment that never synchronized answers an empty page whose freshness says so', async (t) => {
  const { port } = await setup(t, { messages: realMail.slice(0, 20), syncEnabled: false });
  const client = await connect(t, port);
  const page = await ok(client, 'list_emails');
  t.same(page.emails, []);
  t.equal(page.nextCursor, null);
  t.match(page.folderFreshness, [{ accountId: 'rita', folderAlias: 'inbox', wasSynchronized: false, synchronizedAt: null }]);
  const found = await ok(client, 'search_emails', { queryText: 'meeting' });
  t.same(found.matches, []);
  t.match(found.folderFreshness, [{ wasSynchronized: false }]);
});
