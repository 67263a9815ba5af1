/**
 * The outbox reads of the administrative surface on a scratch database
 * (sends recorded with `recordSend` and moved through the lifecycle of
 * outgoing.ts, or set with SQL where the lifecycle would take long):
 * - the summary has one count per stage, all five present, over the
 *   accounts named (a send of an unconfigured account is not counted);
 * - the page is newest first by id, narrowed by account and stage, a
 *   keyset walk visits every send once, pageSize is 1 to 200 (default
 *   50); a row holds recorded time, identifier, account, stage, attempts,
 *   last failure (code and reply code) and a due time only while Recorded,
 *   and nothing else: no recipient, no subject, and no statement of the
 *   listing or the summary reads raw_mime or the recipients;
 * - the detail adds every recipient (address, header, state, reply code,
 *   replied at); a send that does not exist, or of an unconfigured
 *   account, is null.
 */
import t from 'tap';
import { reconcileAccounts } from '../../../../runtime/store/accounts.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { OUTBOX_PAGE_DEFAULT, outboxPage, outboxRow, outboxSummary, outgoingDetail } from '../../../../runtime/store/outbox/listing.ts';
import { cancelSend, claimSend, endAttempt, markBodyBegan, recordSend, STAGES, type RecipientHeader } from '../../../../runtime/store/outbox/outgoing.ts';
import { run } from '../../../../runtime/store/rows.ts';
import { freshStore } from '../mailbox/helpers.ts';

const NO_CEILINGS = { periodMs: 86_400_000, perAccount: null, perCaller: null, perDeployment: null };
const SUBJECT = 'Quarterly figures for the board, confidential';
const ACCOUNTS = ['alice', 'bob'];

let keys = 0;
function send(db: Database, account: string, now: number, recipients: Array<{ address: string; header: RecipientHeader }> = []): number {
  keys += 1;
  const raw = Buffer.from(`Subject: ${SUBJECT}\r\nTo: ${recipients.map((r) => r.address).join(', ')}\r\n\r\nBody ${keys}\r\n`);
  const result = recordSend(
    db,
    {
      accountId: account,
      requester: 'agent',
      idempotencyKey: `key-${keys}`,
      fingerprint: `fp-${keys}`,
      origin: 'new',
      draftId: null,
      messageId: `<m${keys}@example.org>`,
      envelopeFrom: `${account}@example.org`,
      raw,
      recipients: recipients.length > 0 ? recipients : [{ address: 'someone@example.net', header: 'to' }],
      now,
    },
    NO_CEILINGS,
  );
  if (result.outcome !== 'recorded') throw new Error(result.outcome);
  return result.outgoing.id;
}

const retry = { maxAttempts: 5, retryDelayMs: () => 60_000 };

t.test('summary: one count per stage, over the accounts named', async (t) => {
  const db = freshStore(t);
  t.same(outboxSummary(db, ACCOUNTS), { Recorded: 0, TransmissionBegun: 0, Sent: 0, Refused: 0, Cancelled: 0 }, 'every stage, zero');
  t.same(Object.keys(outboxSummary(db, ACCOUNTS)), [...STAGES], 'in the order of the stages');
  reconcileAccounts(db, ['alice', 'bob', 'carol'], 2);
  const recorded = send(db, 'alice', 1_000);
  const cancelled = send(db, 'alice', 1_001);
  const begun = send(db, 'bob', 1_002);
  const sent = send(db, 'bob', 1_003);
  const refused = send(db, 'alice', 1_004);
  send(db, 'carol', 1_005);
  t.equal(cancelSend(db, cancelled, 'operator', null, 2_000), 'Accepted');
  t.ok(claimSend(db, begun, 2_000) && markBodyBegan(db, begun, 2_001));
  t.ok(claimSend(db, sent, 2_000));
  t.equal(endAttempt(db, sent, { replies: [{ position: 0, state: 'accepted', replyCode: 250 }], failure: null, now: 2_002, ...retry }), 'Sent');
  t.ok(claimSend(db, refused, 2_000));
  t.equal(
    endAttempt(db, refused, {
      replies: [{ position: 0, state: 'refused', replyCode: 550 }],
      failure: { code: 'recipient-refused', replyCode: 550 },
      now: 2_003,
      ...retry,
    }),
    'Refused',
  );
  t.ok(recorded);
  t.same(outboxSummary(db, ACCOUNTS), { Recorded: 1, TransmissionBegun: 1, Sent: 1, Refused: 1, Cancelled: 1 }, "carol's send is not counted");
  t.same(outboxSummary(db, ['alice', 'bob', 'carol']).Recorded, 2);
  t.same(outboxSummary(db, []), { Recorded: 0, TransmissionBegun: 0, Sent: 0, Refused: 0, Cancelled: 0 });
});

t.test('page: rows, order, filters, keyset walk, page size', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice', 'bob', 'carol'], 2);
  const ids: number[] = [];
  for (let i = 0; i < 7; i++) ids.push(send(db, i % 2 === 0 ? 'alice' : 'bob', 10_000 + i));
  const carol = send(db, 'carol', 20_000);
  // ids[1] (bob): failed once, waiting for its second attempt; ids[2] (alice): refused with a reply code; ids[3] (bob): begun.
  t.ok(claimSend(db, ids[1]!, 11_000));
  t.equal(
    endAttempt(db, ids[1]!, {
      replies: [{ position: 0, state: 'pending', replyCode: 451 }],
      failure: { code: 'server-busy', replyCode: 451 },
      now: 11_001,
      ...retry,
    }),
    'Recorded',
  );
  t.ok(claimSend(db, ids[2]!, 11_000));
  endAttempt(db, ids[2]!, {
    replies: [{ position: 0, state: 'refused', replyCode: 550 }],
    failure: { code: 'recipient-refused', replyCode: 550 },
    now: 11_002,
    ...retry,
  });
  t.ok(claimSend(db, ids[3]!, 11_000) && markBodyBegan(db, ids[3]!, 11_003));

  const all = outboxPage(db, { accounts: ACCOUNTS });
  t.same(
    all.rows.map((r) => r.id),
    [...ids].reverse(),
    'newest first by id; the unconfigured account is not listed',
  );
  t.equal(all.next, null, 'nothing follows the last page');
  t.notOk(
    all.rows.some((r) => r.id === carol),
    "carol's send is not listed",
  );
  t.same(
    all.rows.find((r) => r.id === ids[1]),
    {
      id: ids[1],
      recordedAt: 10_001,
      accountId: 'bob',
      stage: 'Recorded',
      attemptCount: 1,
      lastFailure: { code: 'server-busy', replyCode: 451 },
      dueAt: 11_001 + 60_000,
    },
  );
  t.same(
    all.rows.find((r) => r.id === ids[0]),
    {
      id: ids[0],
      recordedAt: 10_000,
      accountId: 'alice',
      stage: 'Recorded',
      attemptCount: 0,
      lastFailure: null,
      dueAt: 10_000,
    },
  );
  t.match(
    all.rows.find((r) => r.id === ids[2]),
    { stage: 'Refused', attemptCount: 1, lastFailure: { code: 'recipient-refused', replyCode: 550 }, dueAt: null },
  );
  t.match(
    all.rows.find((r) => r.id === ids[3]),
    { stage: 'TransmissionBegun', lastFailure: null, dueAt: null },
    'a due time only while Recorded',
  );
  for (const row of all.rows) {
    t.same(Object.keys(row).sort(), ['accountId', 'attemptCount', 'dueAt', 'id', 'lastFailure', 'recordedAt', 'stage'], 'nothing but the listing fields');
  }
  const text = JSON.stringify(all);
  t.notOk(text.includes('example.net') || text.includes('Quarterly') || text.includes('agent'), 'no recipient, subject or requester');

  t.same(
    outboxPage(db, { accounts: ACCOUNTS, account: 'bob' }).rows.map((r) => r.id),
    [ids[5], ids[3], ids[1]],
  );
  t.same(
    outboxPage(db, { accounts: ACCOUNTS, stage: 'Recorded' }).rows.map((r) => r.id),
    [ids[6], ids[5], ids[4], ids[1], ids[0]],
  );
  t.same(
    outboxPage(db, { accounts: ACCOUNTS, account: 'alice', stage: 'Recorded' }).rows.map((r) => r.id),
    [ids[6], ids[4], ids[0]],
  );
  t.same(outboxPage(db, { accounts: ACCOUNTS, stage: 'Cancelled' }), { rows: [], next: null });
  t.same(outboxPage(db, { accounts: ACCOUNTS, account: 'carol' }), { rows: [], next: null }, 'an account outside those named lists nothing');

  const walked: number[] = [];
  let after: number | null = null;
  for (let page = 0; page < 10; page++) {
    const answer = outboxPage(db, { accounts: ACCOUNTS, pageSize: 3, after });
    t.ok(answer.rows.length <= 3);
    walked.push(...answer.rows.map((r) => r.id));
    after = answer.next;
    if (after === null) break;
    t.equal(after, answer.rows.at(-1)!.id, 'the next page starts after the last row shown');
  }
  t.same(walked, [...ids].reverse(), 'a walk of three per page visits each send once, in order');
  const exact = outboxPage(db, { accounts: ACCOUNTS, pageSize: 7 });
  t.same([exact.rows.length, exact.next], [7, null], 'a page exactly full says nothing follows');

  for (const pageSize of [0, 201, 1.5, -1]) t.throws(() => outboxPage(db, { accounts: ACCOUNTS, pageSize }), RangeError, `pageSize ${pageSize}`);
  t.equal(outboxPage(db, { accounts: ACCOUNTS, pageSize: 200 }).rows.length, 7);
  t.equal(outboxPage(db, { accounts: ACCOUNTS, pageSize: 1 }).rows.length, 1);
});

t.test('page size: 50 unless asked', async (t) => {
  const db = freshStore(t);
  for (let i = 0; i < OUTBOX_PAGE_DEFAULT + 1; i++) send(db, 'alice', i);
  const page = outboxPage(db, { accounts: ACCOUNTS });
  t.equal(page.rows.length, 50);
  t.equal(page.next, page.rows.at(-1)!.id);
  t.equal(outboxPage(db, { accounts: ACCOUNTS, after: page.next }).rows.length, 1);
});

t.test('detail: the row and every recipient with what the server said', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice', 'bob', 'carol'], 2);
  const id = send(db, 'alice', 5_000, [
    { address: 'to@example.net', header: 'to' },
    { address: 'cc@example.net', header: 'cc' },
    { address: 'hidden@example.net', header: 'bcc' },
  ]);
  t.ok(claimSend(db, id, 6_000));
  endAttempt(db, id, {
    replies: [
      { position: 0, state: 'accepted', replyCode: 250 },
      { position: 1, state: 'refused', replyCode: 550 },
      { position: 2, state: 'pending', replyCode: 452 },
    ],
    failure: { code: 'server-busy', replyCode: 452 },
    now: 6_001,
    ...retry,
  });
  t.same(outgoingDetail(db, id, ACCOUNTS), {
    id,
    recordedAt: 5_000,
    accountId: 'alice',
    stage: 'Recorded',
    attemptCount: 1,
    lastFailure: { code: 'server-busy', replyCode: 452 },
    dueAt: 66_001,
    recipients: [
      { address: 'to@example.net', header: 'to', state: 'accepted', replyCode: 250, repliedAt: 6_001 },
      { address: 'cc@example.net', header: 'cc', state: 'refused', replyCode: 550, repliedAt: 6_001 },
      { address: 'hidden@example.net', header: 'bcc', state: 'pending', replyCode: 452, repliedAt: 6_001 },
    ],
  });
  const fresh = send(db, 'bob', 7_000, [{ address: 'new@example.net', header: 'to' }]);
  t.same(outgoingDetail(db, fresh, ACCOUNTS)!.recipients, [{ address: 'new@example.net', header: 'to', state: 'pending', replyCode: null, repliedAt: null }]);
  t.match(outboxRow(db, fresh, ACCOUNTS), { id: fresh, accountId: 'bob' });
  t.equal(outgoingDetail(db, 999_999, ACCOUNTS), null, 'no such send');
  const carol = send(db, 'carol', 8_000);
  t.equal(outgoingDetail(db, carol, ACCOUNTS), null, 'a send of an account outside those named is unknown');
  t.equal(outboxRow(db, carol, ACCOUNTS), null);
  t.ok(outgoingDetail(db, carol, ['carol']));
});

t.test('the listing and the summary never read raw MIME or the recipients', async (t) => {
  const db = freshStore(t);
  const id = send(db, 'alice', 1);
  run(db.prepare("UPDATE outgoing_emails SET stage = 'Sent', ended_at = 2 WHERE id = ?"), [id]);
  const prepared: string[] = [];
  const prepare = db.prepare.bind(db);
  (db as { prepare: typeof db.prepare }).prepare = ((sql: string) => {
    prepared.push(sql);
    return prepare(sql);
  }) as typeof db.prepare;
  outboxSummary(db, ACCOUNTS);
  outboxPage(db, { accounts: ACCOUNTS });
  outboxRow(db, id, ACCOUNTS);
  t.ok(prepared.length >= 3, 'the statements were prepared here');
  t.same(
    prepared.filter((sql) => /raw_mime|SELECT \*|\.\*/.test(sql)),
    [],
    'no statement names raw_mime or selects every column',
  );
  // The recipients statement is prepared with the others, but only the detail runs it.
  t.same(
    prepared.filter((sql) => sql.includes('outgoing_recipients')),
    ['SELECT address, header, state, reply_code, replied_at FROM outgoing_recipients WHERE outgoing_id = ? ORDER BY position'],
    'one statement reads recipients: the one of the detail',
  );
  t.match(outboxPage(db, { accounts: ACCOUNTS }).rows[0], { stage: 'Sent', dueAt: null });
});
