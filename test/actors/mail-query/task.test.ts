/**
 * The mail-query pool end to end through createPool: the pool is created
 * with the store slice, a pool thread opens its own read-only connection,
 * answers parse against the reply schemas the MCP layer uses, and refusals
 * cross the thread as their codes.
 */
import t from 'tap';
import { MAIL_QUERY_TASK } from '../../../actors/mail-query/protocol.ts';
import { AttachmentSourceReply } from '../../../actors/mail-query/protocol/attachment-source.ts';
import { GetContentReply, ListAccountsResult, ListEmailsResult, SearchEmailsResult } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { encodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { MMAP_BYTES, openReadConnection } from '../../../actors/mail-query/task.ts';
import { extractAttachment } from '../../../actors/mime-parse/attachment-content.ts';
import { AppError } from '../../../runtime/errors.ts';
import { createPool } from '../../../runtime/pool/pool.ts';
import { run } from '../../../runtime/store/rows.ts';
import { deliver, idOf, scope, world } from './fixtures.ts';

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'answered';
  } catch (err) {
    return err instanceof AppError ? err.code : `foreign: ${String(err)}`;
  }
}

t.test('the pool answers the four read tools and the attachment route', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [
    { uid: 1, subject: 'Quarterly report', body: 'The quarterly numbers are in.' },
    { uid: 2, subject: 'Agenda', body: 'Agenda attached.', attachment: { filename: 'agenda.txt', contentType: 'text/plain', content: 'item one' } },
    { uid: 3, subject: 'Third', body: 'Third letter.' },
  ]);
  const pool = createPool({ id: 'mail-query', entry: MAIL_QUERY_TASK, config: w.slice, minThreads: 1, maxThreads: 2 });
  t.teardown(() => pool.close());
  const base = { scope };

  const accounts = await pool.ask({ type: 'mail-query.list-accounts', ...base, input: {} }, { reply: ListAccountsResult });
  t.same(
    accounts.accounts.map((a) => a.accountId),
    ['alice', 'bob'],
  );

  const first = await pool.ask({ type: 'mail-query.list-emails', ...base, input: { pageSize: 2 } }, { reply: ListEmailsResult });
  t.same(
    first.emails.map((e) => e.subject),
    ['Third', 'Agenda'],
  );
  const second = await pool.ask(
    { type: 'mail-query.list-emails', ...base, input: { pageSize: 2, cursor: first.nextCursor ?? undefined } },
    { reply: ListEmailsResult },
  );
  t.same(
    second.emails.map((e) => e.subject),
    ['Quarterly report'],
  );
  t.equal(second.nextCursor, null);

  const found = await pool.ask({ type: 'mail-query.search', ...base, input: { queryText: 'quarterly' } }, { reply: SearchEmailsResult });
  t.same(
    found.matches.map((m) => [m.subject, m.rank]),
    [['Quarterly report', 1]],
  );

  const damagedId = idOf(w.db, w.bindings.aliceInbox, 3);
  run(w.db.prepare("UPDATE message_raw SET mime = CAST('x' AS BLOB) WHERE message_id = ?"), [damagedId]);
  const agendaId = idOf(w.db, w.bindings.aliceInbox, 2);
  const content = await pool.ask(
    {
      type: 'mail-query.get-content',
      ...base,
      input: { storedEmailIds: [encodeStoredEmailId(agendaId), encodeStoredEmailId(damagedId)] },
      bodyCharacterBudget: 6,
    },
    { reply: GetContentReply },
  );
  const agenda = content.emails[0]!;
  t.ok(!('error' in agenda) && agenda.body?.text === 'Agenda' && agenda.body.nextBodyOffset === 6, 'the body is cut at the budget');
  t.same(content.emails[1], {
    storedEmailId: encodeStoredEmailId(damagedId),
    error: { code: 55001, message: 'The stored content of this email is missing or damaged' },
  });
  t.same(content.repairs, [{ messageId: damagedId, accountId: 'alice', reason: 'damaged' }]);

  const source = await pool.ask({ type: 'mail-query.attachment', messageId: agendaId, index: 0, accounts: ['alice'] }, { reply: AttachmentSourceReply });
  const part = extractAttachment(source!.raw, 0);
  t.equal(part?.content.toString(), 'item one', "the attachment route's stored source is served by the same pool");
  t.equal(source!.listedSha256, part?.encodedSha256, 'with the SHA-256 its stored list gives');
  t.equal(await pool.ask({ type: 'mail-query.attachment', messageId: agendaId, index: 0, accounts: ['bob'] }, { reply: AttachmentSourceReply }), null);
});

t.test('refusals cross the thread as their codes', async (t) => {
  const w = world(t);
  const pool = createPool({ id: 'mail-query', entry: MAIL_QUERY_TASK, config: w.slice, minThreads: 1, maxThreads: 1 });
  t.teardown(() => pool.close());
  const base = { scope };
  t.equal(await code(pool.ask({ type: 'mail-query.list-emails', ...base, input: { cursor: 'garbage' } })), 'E_CURSOR_INVALID');
  t.equal(await code(pool.ask({ type: 'mail-query.list-emails', ...base, input: { accounts: ['mallory'] } })), 'E_NOT_FOUND');
  t.equal(await code(pool.ask({ type: 'mail-query.search', ...base, input: { queryText: 'x', resultLimit: 51 } })), 'E_TOOL_RESULT_LIMIT');
  t.equal(await code(pool.ask({ type: 'mail-query.search', ...base, input: { queryText: '-x' } })), 'E_TOOL_INVALID_INPUT');
  t.equal(await code(pool.ask({ type: 'mail-query.get-content', ...base, input: { threadId: 'nothing' }, bodyCharacterBudget: 10 })), 'E_NOT_FOUND');
  t.equal(
    // @ts-expect-error the store is the pool's, given at creation: a message carrying one is refused (strict)
    await code(pool.ask({ type: 'mail-query.list-emails', scope, input: {}, store: w.slice })),
    'E_PROTOCOL_INVALID',
    'a message carrying a store (the pool has its own)',
  );
  t.equal(
    await code(pool.ask({ type: 'mail-query.list-emails', ...base, input: { pageSize: 101 } })),
    'E_PROTOCOL_INVALID',
    'an input the MCP layer should have refused',
  );
  const empty = await pool.ask({ type: 'mail-query.list-emails', ...base, input: {} }, { reply: ListEmailsResult });
  t.same(empty.emails, [], 'still serving after refusals');
});

t.test('a pool created without its store slice refuses every message as a configuration fault', async (t) => {
  // @ts-expect-error the query pool's entry requires its config
  const pool = createPool({ id: 'mail-query', entry: MAIL_QUERY_TASK, minThreads: 1, maxThreads: 1 });
  t.teardown(() => pool.close());
  t.equal(await code(pool.ask({ type: 'mail-query.list-accounts', scope, input: {} })), 'E_CONFIG_INVALID');
});

t.test("the pool's connection cannot write", async (t) => {
  const w = world(t);
  const db = openReadConnection(w.slice);
  t.teardown(() => db.close());
  t.throws(() => run(db.prepare("UPDATE accounts SET updated_at = 2 WHERE id = 'alice'")), { code: 'SQLITE_READONLY' });
  t.same(db.pragma('mmap_size'), [{ mmap_size: MMAP_BYTES }], 'the store file is read through a memory map');
});
