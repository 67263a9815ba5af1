/**
 * The outbox's retention on a scratch database (runtime/store/outbox/retention.ts):
 * - exactly the sends that ended before the instant are erased: Sent (copy
 *   filed or none to file), Refused, Cancelled; never Recorded,
 *   TransmissionBegun, or a Sent send whose sent copy is still owed;
 * - an erased send keeps the tombstone the surfaces answer from (stage,
 *   attempts, failure, each recipient's header, state and reply code, the
 *   caller's key and fingerprint) and loses its raw MIME and every address;
 *   the detail and the listing answer in the same shape; it is never
 *   re-offered, and the journal reads no MIME from it;
 * - a draft sent by an erased send is erased with it; a deleted draft is
 *   erased after its own period; a held draft never;
 * - the steps are bounded (at most `limit` rows a call, oldest first), and
 *   every row not erased is byte for byte as it was.
 */
import t from 'tap';
import { reconcileAccounts } from '../../../../runtime/store/accounts.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { appendSource } from '../../../../runtime/store/mailbox/placements.ts';
import { draftById, endDraft, insertDraft } from '../../../../runtime/store/outbox/drafts.ts';
import { outboxPage, outgoingDetail } from '../../../../runtime/store/outbox/listing.ts';
import {
  cancelSend,
  claimSend,
  endAttempt,
  markBodyBegan,
  outgoingById,
  outgoingByKey,
  recordSend,
  requeueSend,
  settleSentCopy,
} from '../../../../runtime/store/outbox/outgoing.ts';
import { eraseDeletedDrafts, eraseEndedSends } from '../../../../runtime/store/outbox/retention.ts';
import { many, run } from '../../../../runtime/store/rows.ts';
import { freshStore } from '../mailbox/helpers.ts';

const NO_CEILINGS = { periodMs: 86_400_000, perAccount: null, perCaller: null, perDeployment: null };
const SUBJECT = 'Severance terms for Dana, strictly confidential';
const ADDRESSES = ['dana.private@example.net', 'counsel@example.com'];
const retry = { maxAttempts: 5, retryDelayMs: () => 60_000 };

let keys = 0;
function send(db: Database, now: number, draftId: number | null = null): number {
  keys += 1;
  const result = recordSend(
    db,
    {
      accountId: 'alice',
      requester: 'agent',
      idempotencyKey: `key-${keys}`,
      fingerprint: `fp-${keys}`,
      origin: draftId === null ? 'new' : 'draft',
      draftId,
      messageId: `<m${keys}@example.org>`,
      envelopeFrom: 'alice@example.org',
      raw: Buffer.from(`Subject: ${SUBJECT}\r\nTo: ${ADDRESSES.join(', ')}\r\n\r\nBody ${keys}\r\n`),
      recipients: [
        { address: ADDRESSES[0]!, header: 'to' },
        { address: ADDRESSES[1]!, header: 'bcc' },
      ],
      now,
    },
    NO_CEILINGS,
  );
  if (result.outcome !== 'recorded') throw new Error(result.outcome);
  return result.outgoing.id;
}

/** Ends a send `Sent` (first recipient accepted, second refused) at `endedAt`, its sent copy settled unless `copyOwed`. */
function sent(db: Database, id: number, endedAt: number, copyOwed = false): void {
  if (!claimSend(db, id, endedAt - 1)) throw new Error('not claimed');
  const stage = endAttempt(db, id, {
    replies: [
      { position: 0, state: 'accepted', replyCode: 250 },
      { position: 1, state: 'refused', replyCode: 550 },
    ],
    failure: null,
    now: endedAt,
    ...retry,
  });
  if (stage !== 'Sent') throw new Error(stage);
  if (!copyOwed) settleSentCopy(db, id, { job: 9_000 + id });
}

function refused(db: Database, id: number, endedAt: number): void {
  claimSend(db, id, endedAt - 1);
  endAttempt(db, id, {
    replies: [
      { position: 0, state: 'refused', replyCode: 550 },
      { position: 1, state: 'refused', replyCode: 550 },
    ],
    failure: { code: 'recipients-refused', replyCode: 550 },
    now: endedAt,
    ...retry,
  });
}

function draft(db: Database, now: number): number {
  return insertDraft(db, 'alice', 'agent', {
    answering: { storedMessageId: 7, answering: 'senderOnly' },
    messageId: `<d${now}@example.org>`,
    raw: Buffer.from(`Subject: ${SUBJECT}\r\n\r\ndraft\r\n`),
    recipients: [{ address: ADDRESSES[0]!, header: 'to' }],
    now,
  }).id;
}

/** Every row of the outbox tables, as stored. */
function dump(db: Database): Map<string, unknown> {
  const rows = new Map<string, unknown>();
  for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM outgoing_emails'))) rows.set(`o${r.id}`, r);
  for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM outgoing_recipients'))) rows.set(`r${r.outgoing_id}:${r.position}`, r);
  for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM drafts'))) rows.set(`d${r.id}`, r);
  return rows;
}

const DAY = 86_400_000;
const NOW = 100 * DAY;
const CUT = NOW - 30 * DAY;

t.test('exactly the sends ended before the instant are erased; each leaves the tombstone the surfaces answer from', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice'], 1);
  const oldSent = send(db, CUT - 10);
  sent(db, oldSent, CUT - 1);
  const oldRefused = send(db, CUT - 10);
  refused(db, oldRefused, CUT - 2);
  const oldCancelled = send(db, CUT - 10);
  t.equal(cancelSend(db, oldCancelled, 'operator', null, CUT - 3), 'Accepted');
  const atCut = send(db, CUT - 10);
  sent(db, atCut, CUT);
  const young = send(db, CUT - 10);
  sent(db, young, CUT + 1);
  const copyOwed = send(db, CUT - 10);
  sent(db, copyOwed, CUT - 5, true);
  const begun = send(db, CUT - 10);
  t.ok(claimSend(db, begun, CUT - 9) && markBodyBegan(db, begun, CUT - 8));
  const recorded = send(db, CUT - 10);

  const heldDraft = draft(db, CUT - 20);
  const draftSent = draft(db, CUT - 20);
  t.ok(endDraft(db, draftSent, 'sent', CUT - 19));
  const viaDraft = send(db, CUT - 19, draftSent);
  sent(db, viaDraft, CUT - 4);

  const before = dump(db);
  const detailBefore = outgoingDetail(db, oldSent, ['alice'])!;
  const pageBefore = outboxPage(db, { accounts: ['alice'] });

  t.equal(eraseEndedSends(db, CUT, 100, NOW), 4, 'Sent, Refused, Cancelled and the draft send, all ended before the instant');
  t.equal(eraseEndedSends(db, CUT, 100, NOW), 0, 'a second call finds nothing left');

  const erased = new Set([oldSent, oldRefused, oldCancelled, viaDraft]);
  const after = dump(db);
  for (const [key, row] of before) {
    const outgoing = Number(/^[or](\d+)/.exec(key)?.[1]);
    if (erased.has(outgoing) || key === `d${draftSent}`) continue;
    t.same(after.get(key), row, `${key} is untouched`);
  }

  for (const id of erased) {
    const o = outgoingById(db, id)!;
    t.ok(o.erased, `o${id} is marked erased`);
    const raw = many<{ n: number }>(db.prepare('SELECT length(raw_mime) AS n FROM outgoing_emails WHERE id = ?'), [id])[0]!.n;
    t.equal(raw, 0, `o${id}: no MIME left`);
    const addresses = many<{ address: string }>(db.prepare('SELECT address FROM outgoing_recipients WHERE outgoing_id = ?'), [id]);
    t.same(
      addresses.map((a) => a.address),
      ['', ''],
      `o${id}: both recipients kept, no address left`,
    );
    const { raw_mime: _was, erased_at: _none, ...kept } = before.get(`o${id}`) as Record<string, unknown>;
    const { raw_mime: _is, erased_at: at, ...now } = after.get(`o${id}`) as Record<string, unknown>;
    t.same(now, kept, `o${id}: every other column as it was`);
    t.equal(at, NOW, `o${id}: erased now`);
  }
  const bytesText = (v: unknown): string =>
    v instanceof ArrayBuffer
      ? Buffer.from(v).toString('latin1')
      : ArrayBuffer.isView(v)
        ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('latin1')
        : String(v);
  const textOf = (rows: unknown[]): string =>
    rows
      .map((row) =>
        Object.values(row as object)
          .map(bytesText)
          .join('|'),
      )
      .join('\n');
  t.notOk(textOf([...erased].map((id) => after.get(`o${id}`))).includes(SUBJECT), 'no subject in an erased send');
  t.ok(textOf([after.get(`o${young}`)]).includes(SUBJECT), 'a send not erased still holds its own');

  const detail = outgoingDetail(db, oldSent, ['alice'])!;
  t.same(
    detail,
    { ...detailBefore, recipients: detailBefore.recipients.map((r) => ({ ...r, address: '' })) },
    'the detail answers in the same shape: stage, attempts, failure, each recipient with its header, state and reply code',
  );
  t.same(outboxPage(db, { accounts: ['alice'] }), pageBefore, 'the listing is unchanged (it never showed an address)');
  const repeat = outgoingByKey(db, 'alice', 'agent', `key-${oldSent}`);
  t.equal(repeat?.outgoing.id, oldSent, "the caller's key still names the send, so a repeat never sends twice");
  t.equal(repeat?.fingerprint, `fp-${oldSent}`);

  const d = draftById(db, draftSent)!;
  t.same([d.state, d.recipients, d.answering], ['sent', [], null], 'the draft the erased send was made from is erased with it');
  t.equal(many<{ n: number }>(db.prepare('SELECT length(raw_mime) AS n FROM drafts WHERE id = ?'), [draftSent])[0]!.n, 0);
  t.ok(draftById(db, heldDraft)!.recipients.length === 1, 'a held draft is never erased');

  t.equal(requeueSend(db, oldRefused, true, new Set(), NOW), 'StageDoesNotAllowIt', 'an erased Refused send has nothing to offer again');
  t.equal(requeueSend(db, oldCancelled, false, new Set(), NOW), 'StageDoesNotAllowIt', 'nor an erased Cancelled one');
  t.equal(outgoingById(db, oldCancelled)!.stage, 'Cancelled', 'the stage stays');
  t.same(
    [recorded, begun, copyOwed, young, atCut].map((id) => outgoingById(db, id)!.erased),
    [false, false, false, false, false],
    'Recorded, TransmissionBegun, copy owed, ended at or after the instant: kept',
  );
  t.equal(appendSource(db, 'alice', { table: 'outgoing_emails', id: oldSent }), null, 'the journal reads no MIME from an erased send');
  t.not(appendSource(db, 'alice', { table: 'outgoing_emails', id: young }), null, 'and still reads it from one kept');
  t.equal(appendSource(db, 'alice', { table: 'drafts', id: draftSent }), null, 'nor from its erased draft');
});

t.test('a refused send kept is re-offered; erased, it is not', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice'], 1);
  const kept = send(db, CUT - 10);
  refused(db, kept, CUT + 5);
  const gone = send(db, CUT - 10);
  refused(db, gone, CUT - 5);
  t.equal(eraseEndedSends(db, CUT, 10, NOW), 1);
  t.equal(requeueSend(db, kept, true, new Set(), NOW), 'Accepted');
  t.equal(outgoingById(db, kept)!.stage, 'Recorded');
  t.equal(requeueSend(db, gone, true, new Set(), NOW), 'StageDoesNotAllowIt');
  t.equal(outgoingById(db, gone)!.stage, 'Refused');
});

t.test('bounded steps: at most `limit` sends a call, oldest ending first', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice'], 1);
  const ids: number[] = [];
  for (let i = 0; i < 450; i++) ids.push(send(db, 1_000 + i));
  // Ended in reverse order of id, so "oldest first" is told apart from "lowest id first".
  const end = db.prepare("UPDATE outgoing_emails SET stage = 'Cancelled', ended_at = ? WHERE id = ?");
  db.transaction(() => {
    for (const [i, id] of ids.entries()) run(end, [CUT - 1 - i, id]);
  })();
  const erasedIds = (): number[] =>
    many<{ id: number }>(db.prepare('SELECT id FROM outgoing_emails WHERE erased_at IS NOT NULL ORDER BY ended_at, id')).map((r) => r.id);
  t.equal(eraseEndedSends(db, CUT, 200, NOW), 200);
  t.same(erasedIds(), [...ids].reverse().slice(0, 200), 'the 200 that ended first');
  t.equal(eraseEndedSends(db, CUT, 200, NOW), 200);
  t.equal(eraseEndedSends(db, CUT, 200, NOW), 50);
  t.equal(eraseEndedSends(db, CUT, 200, NOW), 0);
  t.equal(erasedIds().length, 450);
  t.throws(() => eraseEndedSends(db, CUT, 0, NOW), /limit/);
});

t.test('deleted drafts: erased after their own period, oldest deletion first, in bounded steps; held ones never', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice'], 1);
  const deleted: number[] = [];
  for (let i = 0; i < 5; i++) {
    const id = draft(db, 10 + i);
    t.ok(endDraft(db, id, 'deleted', CUT - 10 + i));
    deleted.push(id);
  }
  const late = draft(db, 20);
  endDraft(db, late, 'deleted', CUT);
  const held = draft(db, 21);
  const before = dump(db);
  t.equal(eraseDeletedDrafts(db, CUT, 3, NOW), 3);
  t.equal(eraseDeletedDrafts(db, CUT, 3, NOW), 2);
  t.equal(eraseDeletedDrafts(db, CUT, 3, NOW), 0, 'the one deleted at the instant stays');
  for (const id of deleted) {
    const d = draftById(db, id)!;
    t.same([d.state, d.recipients, d.answering, d.revision], ['deleted', [], null, 1], `d${id}: a tombstone`);
  }
  t.same(dump(db).get(`d${late}`), before.get(`d${late}`), 'deleted at the instant: untouched');
  t.same(dump(db).get(`d${held}`), before.get(`d${held}`), 'held: untouched');
  t.equal(eraseEndedSends(db, NOW, 10, NOW), 0, 'no send is touched by the drafts prune');
});
