/**
 * Drafts: saved and restated whole (each revision composed once, like a
 * send), deleted, and sent as their exact message. The server copies are
 * filed and removed by the change journal (filing.ts), after the local
 * write, so a draft is never lost to a mail server that is down.
 */
import { AppError } from '../../runtime/errors.ts';
import { readPlacement } from '../../runtime/store/mailbox/placements.ts';
import { draftById, draftIdOf, draftRaw, endDraft, insertDraft, restateDraft } from '../../runtime/store/outbox/drafts.ts';
import { outgoingByKey } from '../../runtime/store/outbox/outgoing.ts';
import type { OutboxState } from './actor.ts';
import { composeFor, fingerprintOf, recordComposed, recordedReply, refusalOf, senderRefusal } from './sends.ts';
import { type DeleteDraftReply, DRAFTS_PERMISSION, type DraftReply, type OutboxMessage, type SaveDraftReply, type SendReply } from './protocol.ts';

export { fileOwed, type Filing } from './filing.ts';

type DraftRefusal = Extract<DraftReply, { sentence: string }>;
const refusal = (outcome: DraftRefusal['outcome'], sentence: string): DraftRefusal => ({ outcome, sentence });
const NOT_FOUND = refusal('not-found', 'no such draft is available to this caller');
const PASSED = refusal('state-passed', 'this draft was already sent or deleted');

/** The held draft of this caller, or the refusal to answer. */
function heldDraft(state: OutboxState, id: number, requester: string) {
  const draft = draftById(state.db, id);
  if (draft === null || draft.requester !== requester) return NOT_FOUND;
  if (draft.state !== 'held') return PASSED;
  return draft;
}

export async function saveDraftOf(state: OutboxState, msg: Extract<OutboxMessage, { type: 'outbox.save-draft' }>): Promise<SaveDraftReply> {
  if (!msg.permissions.includes(DRAFTS_PERMISSION)) return refusal('not-permitted', 'this caller is not permitted to write drafts');
  let accountId = msg.accountId;
  if (msg.draftId !== null) {
    const draft = heldDraft(state, msg.draftId, msg.requester);
    if ('outcome' in draft) return draft;
    accountId = draft.accountId;
  }
  const account = state.config.accounts.find((a) => a.id === accountId);
  if (!account) return NOT_FOUND;
  if (account.address === null) return refusal('invalid', 'this account has no sender address (Accounts[].Smtp:From), so it cannot hold drafts');
  let composed: Awaited<ReturnType<typeof composeFor>>;
  try {
    composed = await composeFor(state, accountId, msg.composition);
  } catch (err) {
    const r = refusalOf(err);
    return refusal(r.outcome === 'not-found' ? 'not-found' : 'invalid', r.sentence);
  }
  const content = { answering: composed.answering, messageId: composed.messageId, raw: composed.raw, recipients: composed.recipients, now: Date.now() };
  if (msg.draftId === null) {
    const draft = insertDraft(state.db, accountId, msg.requester, content);
    return { outcome: 'saved', draftId: draftIdOf(draft.id), accountId, state: 'held', revision: draft.revision };
  }
  if (!restateDraft(state.db, msg.draftId, content)) return PASSED;
  const draft = draftById(state.db, msg.draftId)!;
  return { outcome: 'saved', draftId: draftIdOf(draft.id), accountId, state: 'held', revision: draft.revision };
}

export function deleteDraftOf(state: OutboxState, msg: Extract<OutboxMessage, { type: 'outbox.delete-draft' }>): DeleteDraftReply {
  if (!msg.permissions.includes(DRAFTS_PERMISSION)) return refusal('not-permitted', 'this caller is not permitted to write drafts');
  const draft = heldDraft(state, msg.draftId, msg.requester);
  if ('outcome' in draft) return draft;
  // A filing the journal gave up on may have placed a copy nobody can find again: say so rather than promise it is gone.
  const filing = draft.filedJob === null ? null : readPlacement(state.db, draft.filedJob, draft.accountId);
  const leftBehind = filing !== null && (filing.state === 'dead-lettered' || filing.state === 'dropped');
  if (!endDraft(state.db, draft.id, 'deleted', Date.now())) return PASSED;
  return { outcome: 'deleted', draftId: draftIdOf(draft.id), result: leftBehind ? 'copyLeftBehind' : 'deleted' };
}

/** `send_draft`: the draft's exact message (its MIME and Message-ID) recorded as a send; the draft is then sent, not editable. */
export function recordDraftSend(state: OutboxState, msg: Extract<OutboxMessage, { type: 'outbox.send-draft' }>): SendReply {
  const draft = draftById(state.db, msg.draftId);
  if (draft === null || draft.requester !== msg.requester) return { outcome: 'not-found', sentence: 'no such draft is available to this caller' };
  const refused = senderRefusal(state, msg.permissions, draft.accountId);
  if (refused) return refused;
  const fingerprint = fingerprintOf({ draft: draft.id, revision: draft.revision });
  const earlier = outgoingByKey(state.db, draft.accountId, msg.requester, msg.idempotencyKey);
  if (earlier) {
    if (earlier.fingerprint !== fingerprint)
      return { outcome: 'key-conflict', sentence: 'the idempotencyKey was already used for another message; use a new key' };
    endDraft(state.db, draft.id, 'sent', Date.now());
    return recordedReply(state.db, earlier.outgoing);
  }
  if (draft.state !== 'held') return { outcome: 'invalid', sentence: PASSED.sentence };
  const raw = draftRaw(state.db, draft.id);
  if (raw === null) throw new AppError('E_INTERNAL');
  const reply = recordComposed(
    state,
    { accountId: draft.accountId, requester: msg.requester, idempotencyKey: msg.idempotencyKey, fingerprint, origin: 'draft', draftId: draft.id },
    { raw, messageId: draft.messageId, recipients: draft.recipients },
  );
  if (reply.outcome === 'recorded') endDraft(state.db, draft.id, 'sent', Date.now());
  return reply;
}
