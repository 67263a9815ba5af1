/**
 * Recording a send (`outbox.record-send`) and reading one back
 * (`outbox.outgoing`). Recording checks, in order: the caller's grant (the
 * third check of `service.mail.send`), the account's SMTP server, the
 * caller's key (the same key and request answer the first record before
 * anything is composed), the original (a reply or forward names a stored
 * email of the account), the composition's bounds, the recipient policy,
 * and then the ceilings inside the transaction that records the send.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one } from '../../runtime/store/rows.ts';
import { perConnection } from '../../runtime/store/mailbox/prepared.ts';
import {
  type CeilingName,
  type NewSend,
  type Outgoing,
  outgoingById,
  outgoingByKey,
  outgoingIdOf,
  recipientsOf,
  recordSend,
} from '../../runtime/store/outbox/outgoing.ts';
import type { OutboxState } from './actor.ts';
import { type Composed, compose, parseOriginal } from './compose.ts';
import { anyHolds, assertedHolds } from '../../runtime/store/contacts/book.ts';
import { policyRefusal } from './policy.ts';
import { type Composition, type OutboxMessage, SEND_PERMISSION, type OutgoingView, type SendReply } from './protocol.ts';

type Refusal = Extract<SendReply, { sentence: string }>;
const refusal = (outcome: Refusal['outcome'], sentence: string): Refusal => ({ outcome, sentence });

export const MCP_STATE = {
  Recorded: 'queued',
  TransmissionBegun: 'sending',
  Sent: 'sent',
  Refused: 'refused',
  Cancelled: 'cancelled',
} as const;

export function stateOf(o: Outgoing): OutgoingView['state'] {
  return o.stage === 'Recorded' && o.claimed ? 'sending' : MCP_STATE[o.stage];
}

export function fingerprintOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url');
}

export function recordedReply(db: Database, o: Outgoing): SendReply {
  return {
    outcome: 'recorded',
    outgoingEmailId: outgoingIdOf(o.id),
    accountId: o.accountId,
    state: stateOf(o),
    recipientCount: recipientsOf(db, o.id).length,
    queuedAt: new Date(o.recordedAt).toISOString(),
  };
}

const CEILING_SENTENCES: Record<CeilingName, string> = {
  account: "this account's sends for the period are spent (Outbox:Ceilings:PerAccount); try again later",
  caller: "this caller's sends for the period are spent (Outbox:Ceilings:PerCaller); try again later",
  deployment: "this deployment's sends for the period are spent (Outbox:Ceilings:PerDeployment); try again later",
};

/** The caller may send, and the account can: a refusal otherwise. */
export function senderRefusal(state: OutboxState, permissions: readonly string[], accountId: string): Refusal | null {
  if (!permissions.includes(SEND_PERMISSION)) return refusal('not-permitted', 'this caller is not permitted to send mail');
  const account = state.config.accounts.find((a) => a.id === accountId);
  if (!account) return refusal('not-found', 'no such account is available to this caller');
  if (!account.smtp || account.address === null) return refusal('no-smtp', 'this account has no SMTP server configured (Accounts[].Smtp), so it cannot send');
  return null;
}

const originalStatement = perConnection((db: Database) =>
  db.prepare(`SELECT r.mime FROM messages m JOIN message_raw r ON r.message_id = m.id WHERE m.id = ? AND m.account_id = ? AND m.state <> 'tombstoned'`),
);

/** The raw MIME of a live stored email of the account; null when there is none. */
export function storedOriginal(db: Database, messageId: number, accountId: string): Uint8Array | null {
  return one<{ mime: Uint8Array }>(originalStatement(db), [messageId, accountId])?.mime ?? null;
}

/** Compose for an account, reading the original a reply or forward names; an AppError names a bound or a missing original. */
export async function composeFor(state: OutboxState, accountId: string, composition: Composition): Promise<Composed> {
  const from = state.config.accounts.find((a) => a.id === accountId)!.address!;
  let original = null;
  if (composition.kind !== 'new') {
    const raw = storedOriginal(state.db, composition.original, accountId);
    if (raw === null) throw new AppError('E_NOT_FOUND');
    original = await parseOriginal(composition.original, raw);
  }
  return compose(from, composition, original, new Date());
}

export function refusalOf(err: unknown): Refusal {
  if (err instanceof AppError && err.code === 'E_TOOL_INVALID_INPUT') return refusal('invalid', err.message);
  if (err instanceof AppError && err.code === 'E_NOT_FOUND') return refusal('not-found', err.message);
  throw err;
}

/** Record the composed message as a send: policy, then ceilings and the record in one transaction. */
export function recordComposed(
  state: OutboxState,
  send: Omit<NewSend, 'messageId' | 'envelopeFrom' | 'raw' | 'recipients' | 'now'>,
  composed: Pick<Composed, 'raw' | 'messageId' | 'recipients'>,
): SendReply {
  const policy = policyRefusal(
    composed.recipients.map((r) => r.address),
    state.config.policy,
    (address, origin) => (origin === 'asserted' ? assertedHolds(state.db, address) : anyHolds(state.db, address)),
  );
  if (policy !== null) return refusal('policy', policy);
  const from = state.config.accounts.find((a) => a.id === send.accountId)!.address!;
  const result = recordSend(
    state.db,
    { ...send, messageId: composed.messageId, envelopeFrom: from, raw: composed.raw, recipients: composed.recipients, now: Date.now() },
    state.config.ceilings,
  );
  if (result.outcome === 'key-conflict') return refusal('key-conflict', 'the idempotencyKey was already used for another message; use a new key');
  if (result.outcome === 'ceiling') return refusal('ceiling', CEILING_SENTENCES[result.ceiling]);
  return recordedReply(state.db, result.outgoing);
}

export async function recordNewSend(state: OutboxState, msg: Extract<OutboxMessage, { type: 'outbox.record-send' }>): Promise<SendReply> {
  const refused = senderRefusal(state, msg.permissions, msg.accountId);
  if (refused) return refused;
  const fingerprint = fingerprintOf({ composition: msg.composition });
  const earlier = outgoingByKey(state.db, msg.accountId, msg.requester, msg.idempotencyKey);
  if (earlier)
    return earlier.fingerprint === fingerprint
      ? recordedReply(state.db, earlier.outgoing)
      : refusal('key-conflict', 'the idempotencyKey was already used for another message; use a new key');
  let composed: Composed;
  try {
    composed = await composeFor(state, msg.accountId, msg.composition);
  } catch (err) {
    return refusalOf(err);
  }
  return recordComposed(
    state,
    {
      accountId: msg.accountId,
      requester: msg.requester,
      idempotencyKey: msg.idempotencyKey,
      fingerprint,
      origin: msg.composition.kind,
      draftId: null,
    },
    composed,
  );
}

/** One send as its caller reads it; null for an id that names none of the caller's sends. */
export function outgoingView(db: Database, id: number, requester: string): OutgoingView | null {
  const o = outgoingById(db, id);
  if (o === null || o.requester !== requester) return null;
  const recipients = recipientsOf(db, id);
  return {
    outgoingEmailId: outgoingIdOf(o.id),
    accountId: o.accountId,
    state: stateOf(o),
    recipientCount: recipients.length,
    queuedAt: new Date(o.recordedAt).toISOString(),
    attemptCount: o.attemptCount,
    failureCode: o.failureCode,
    recipients: recipients.map((r) => ({ address: r.address, header: r.header, state: r.state, replyCode: r.replyCode })),
  };
}
