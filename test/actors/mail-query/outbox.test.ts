/**
 * The query pool's outbox reads: the summary, a page and its next position,
 * one send with its recipients, and the lookup the write routes use; each
 * answer fits its reply schema, is dispatched by the pool task on a
 * read-only connection, and holds no recipient outside the detail. A send
 * of an account the deployment no longer configures is neither counted,
 * listed nor found.
 */
import t from 'tap';
import { lookUpOutgoing, outboxPageOf, outboxSummaryOf, outgoingEmailOf } from '../../../actors/mail-query/outbox.ts';
import { MailQueryMessage } from '../../../actors/mail-query/protocol.ts';
import {
  OutboxPageReply,
  OutboxSummaryReply,
  OutgoingEmailReply,
  OutgoingLookupReply,
  outgoingIdOf,
  outgoingRowOf,
} from '../../../actors/mail-query/protocol/outbox-reads.ts';
import { answer } from '../../../actors/mail-query/task.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import type { Database } from '../../../runtime/store/open.ts';
import { claimSend, endAttempt, recordSend } from '../../../runtime/store/outbox/outgoing.ts';
import { freshStore } from '../../runtime/store/mailbox/helpers.ts';

const accounts = ['alice', 'bob'];

function send(db: Database, account: string, key: string, now: number): number {
  const result = recordSend(
    db,
    {
      accountId: account,
      requester: 'agent',
      idempotencyKey: key,
      fingerprint: key,
      origin: 'new',
      draftId: null,
      messageId: `<${key}@example.org>`,
      envelopeFrom: `${account}@example.org`,
      raw: Buffer.from('Subject: Secret plans\r\n\r\nbody\r\n'),
      recipients: [
        { address: 'first@example.net', header: 'to' },
        { address: 'blind@example.net', header: 'bcc' },
      ],
      now,
    },
    { periodMs: 1, perAccount: null, perCaller: null, perDeployment: null },
  );
  if (result.outcome !== 'recorded') throw new Error(result.outcome);
  return result.outgoing.id;
}

t.test('ids: o and the row id', async (t) => {
  t.equal(outgoingIdOf(12), 'o12');
  t.equal(outgoingRowOf('o12'), 12);
  for (const bad of ['12', 'o0', 'O12', 'o12 ', 'o-1', 'o1e3', 'o1234567890123456', '', 'j12']) t.equal(outgoingRowOf(bad), null, JSON.stringify(bad));
});

t.test('summary, page, detail and lookup', async (t) => {
  const db = freshStore(t);
  reconcileAccounts(db, ['alice', 'bob', 'carol'], 2);
  const a = send(db, 'alice', 'k1', 1_000);
  const b = send(db, 'bob', 'k2', 2_000);
  const c = send(db, 'carol', 'k3', 3_000);
  t.ok(claimSend(db, b, 2_500));
  endAttempt(db, b, {
    replies: [
      { position: 0, state: 'accepted', replyCode: 250 },
      { position: 1, state: 'refused', replyCode: 550 },
    ],
    failure: null,
    now: 2_600,
    maxAttempts: 5,
    retryDelayMs: () => 1_000,
  });

  t.same(OutboxSummaryReply.parse(outboxSummaryOf(db, { type: 'mail-query.outbox-summary', accounts })), {
    stageCounts: { Recorded: 1, TransmissionBegun: 0, Sent: 1, Refused: 0, Cancelled: 0 },
  });

  const base = { type: 'mail-query.outbox' as const, accounts, pageSize: 1 };
  const first = OutboxPageReply.parse(outboxPageOf(db, base));
  t.same(first, {
    outgoingEmails: [
      {
        outgoingEmail: `o${b}`,
        recordedAt: new Date(2_000).toISOString(),
        account: 'bob',
        stage: 'Sent',
        attemptCount: 1,
        lastFailure: { code: 'recipient-refused', replyCode: null },
        dueAt: null,
      },
    ],
    next: b,
  });
  const second = OutboxPageReply.parse(outboxPageOf(db, { ...base, after: first.next! }));
  t.same([second.outgoingEmails.map((e) => e.outgoingEmail), second.next], [[`o${a}`], null], 'the last page says nothing follows');
  t.equal(second.outgoingEmails[0]!.dueAt, new Date(1_000).toISOString(), 'a Recorded send is due');
  t.same(
    outboxPageOf(db, { ...base, pageSize: 10, stage: 'Recorded' }).outgoingEmails.map((e) => e.outgoingEmail),
    [`o${a}`],
  );
  t.same(
    outboxPageOf(db, { ...base, pageSize: 10, account: 'bob' }).outgoingEmails.map((e) => e.outgoingEmail),
    [`o${b}`],
  );
  t.notOk(/example\.net|Secret/.test(JSON.stringify(outboxPageOf(db, { ...base, pageSize: 10 }))), 'the page holds no recipient or subject');

  const detail = OutgoingEmailReply.parse(outgoingEmailOf(db, { type: 'mail-query.outgoing-email', accounts, outgoing: b }));
  t.same(detail.outgoingEmail!.recipients, [
    { address: 'first@example.net', header: 'to', state: 'accepted', replyCode: 250, repliedAt: new Date(2_600).toISOString() },
    { address: 'blind@example.net', header: 'bcc', state: 'refused', replyCode: 550, repliedAt: new Date(2_600).toISOString() },
  ]);
  t.match(detail.outgoingEmail, { outgoingEmail: `o${b}`, account: 'bob', stage: 'Sent' });
  t.same(outgoingEmailOf(db, { type: 'mail-query.outgoing-email', accounts, outgoing: c }), { outgoingEmail: null }, 'an unconfigured account: unknown');
  t.same(outgoingEmailOf(db, { type: 'mail-query.outgoing-email', accounts, outgoing: 99_999 }), { outgoingEmail: null });

  const lookup = { type: 'mail-query.outgoing-lookup' as const, accounts };
  t.same(OutgoingLookupReply.parse(lookUpOutgoing(db, { ...lookup, outgoing: a })), { account: 'alice' });
  t.same(lookUpOutgoing(db, { ...lookup, outgoing: c }), { account: null }, 'an unconfigured account: unknown');
  t.same(lookUpOutgoing(db, { ...lookup, outgoing: 99_999 }), { account: null });
});

t.test('the pool task dispatches each message and validates it', async (t) => {
  const db = freshStore(t);
  const id = send(db, 'alice', 'k1', 1_000);
  db.pragma('query_only = ON');
  const messages = [
    { type: 'mail-query.outbox-summary', accounts },
    { type: 'mail-query.outbox', accounts, pageSize: 50, stage: 'Recorded', account: 'alice' },
    { type: 'mail-query.outgoing-email', accounts, outgoing: id },
    { type: 'mail-query.outgoing-lookup', accounts, outgoing: id },
  ];
  const replies = [OutboxSummaryReply, OutboxPageReply, OutgoingEmailReply, OutgoingLookupReply];
  for (const [i, message] of messages.entries()) {
    const parsed = MailQueryMessage.parse(message);
    t.ok(replies[i]!.safeParse(answer(db, parsed as Exclude<MailQueryMessage, { type: 'mail-query.attachment' }>)).success, message.type);
  }
  for (const bad of [
    { type: 'mail-query.outbox', accounts, pageSize: 201 },
    { type: 'mail-query.outbox', accounts, pageSize: 0 },
    { type: 'mail-query.outbox', accounts, pageSize: 5, stage: 'Queued' },
    { type: 'mail-query.outbox', accounts, pageSize: 5, after: 0 },
    { type: 'mail-query.outgoing-email', accounts, outgoing: 0 },
  ]) {
    t.notOk(MailQueryMessage.safeParse(bad).success, `refused: ${JSON.stringify({ ...bad, store: undefined })}`);
  }
});
