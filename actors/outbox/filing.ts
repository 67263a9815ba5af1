/**
 * What the outbox owes the mail server, handed to each account's sync actor
 * (the sole holder of its IMAP sessions) as change-journal placements:
 *
 * - the copy of each Sent send in the sent folder, with `\Seen`;
 * - each draft's current revision in the drafts folder, with `\Draft`;
 * - the removal of a draft's earlier copies, recorded once its current
 *   revision is placed (or it was sent or deleted), so an update appends
 *   the new version before it removes the old one.
 *
 * Each ask names a request id derived from the row (`sent-copy:<id>`,
 * `draft:<id>:<revision>`, `removal:<job>`), so asking again after a crash
 * between the journal's write and ours answers the same job: nothing is
 * placed twice. The journal finds an append whose answer was lost by its
 * Message-ID. A sync actor that is down leaves the work owed until the next
 * tick.
 */
import type { Context } from '@opentelemetry/api';
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { readPlacement } from '../../runtime/store/mailbox/placements.ts';
import { draftsWithRetired, markDraftFiled, retireFiledCopy, setRetiredJobs, unfiledDrafts } from '../../runtime/store/outbox/drafts.ts';
import { sentCopiesOwed, settleSentCopy } from '../../runtime/store/outbox/outgoing.ts';
import { AccessTokenReply, type ImapSyncProtocol, type RecordAppend, RecordPlacementReply, type RecordRemoval, syncActorId } from '../imap-sync/protocol.ts';
import type { ActorId } from '../../runtime/ref.ts';
import type { OutboxState } from './actor.ts';

/** `again`: a pass was asked for while one was under way; it runs once more when it ends. */
export type Filing = { busy: boolean; again: boolean };

// Not a slug, so no credential's name (the requester of an agent's changes) can share its request ids.
const REQUESTER = 'mailcairn:outbox';
const BATCH = 20;
const ASK_DEADLINE_MS = 30_000;

/** An XOAUTH2 access token for the account's SMTP login, from the sync actor that holds its sealed refresh token; `fresh` after the server refused the last one. */
export async function accessToken(ctx: ActorContext, syncActor: ActorId<ImapSyncProtocol>, fresh: boolean, parent?: Context): Promise<string> {
  const reply = await ctx.ask(
    syncActor,
    { type: 'imap-sync.access-token', fresh },
    { reply: AccessTokenReply, deadlineMs: ASK_DEADLINE_MS, ...(parent !== undefined ? { parent } : {}) },
  );
  return reply.accessToken;
}

/** A placement the outbox asks for; the requester is always the outbox. */
type Placement = Omit<RecordAppend, 'requester'> | Omit<RecordRemoval, 'requester'>;

function place(ctx: ActorContext, accountId: string, msg: Placement): Promise<RecordPlacementReply> {
  return ctx.ask(syncActorId(accountId), { requester: REQUESTER, ...msg }, { reply: RecordPlacementReply, deadlineMs: ASK_DEADLINE_MS });
}

/** Refusals of one placement (its row, or its request id): asking again cannot succeed, so that copy is given up. */
const REFUSALS = new Set(['E_NOT_FOUND', 'E_TOOL_REQUEST_CONFLICT', 'E_PROTOCOL_INVALID']);

async function fileSentCopies(state: OutboxState, ctx: ActorContext): Promise<void> {
  for (const o of sentCopiesOwed(state.db, BATCH)) {
    const smtp = state.config.accounts.find((a) => a.id === o.accountId)?.smtp;
    if (smtp?.sentCopy === false) {
      settleSentCopy(state.db, o.id, 'none');
      if (o.draftId !== null) retireFiledCopy(state.db, o.draftId);
      continue;
    }
    const reply = await place(ctx, o.accountId, {
      type: 'imap-sync.record-append',
      requestId: `sent-copy:${o.id}`,
      target: 'sent',
      source: { table: 'outgoing_emails', id: o.id },
      flags: ['\\Seen'],
      messageIdHeader: o.messageId,
    }).catch((err: unknown) => {
      if (!(err instanceof AppError) || !REFUSALS.has(err.code)) throw err;
      ctx.log.warn(
        { event: 'outbox.sent-copy-refused', outgoing: o.id, account: o.accountId, code: err.code },
        'outbox.sent-copy-refused: no copy is filed for this send',
      );
      return null;
    });
    if (state.closed) return;
    settleSentCopy(state.db, o.id, reply === null ? 'none' : { job: reply.job });
    // A sent draft is sent: its copy in the drafts folder goes.
    if (o.draftId !== null) retireFiledCopy(state.db, o.draftId);
  }
}

async function fileDrafts(state: OutboxState, ctx: ActorContext): Promise<void> {
  for (const d of unfiledDrafts(state.db, BATCH)) {
    const reply = await place(ctx, d.accountId, {
      type: 'imap-sync.record-append',
      requestId: `draft:${d.id}:${d.revision}`,
      target: 'drafts',
      source: { table: 'drafts', id: d.id },
      flags: ['\\Draft'],
      messageIdHeader: d.messageId,
    });
    if (state.closed) return;
    markDraftFiled(state.db, d.id, d.revision, reply.job);
  }
}

/** Placement states after which nothing more happens to a draft's filing by itself. */
const ENDED = new Set(['completed', 'dead-lettered', 'dropped']);

/** Returns whether some removal waits for its draft's new revision to be placed. */
async function removeRetired(state: OutboxState, ctx: ActorContext): Promise<boolean> {
  let waiting = false;
  for (const d of draftsWithRetired(state.db, BATCH)) {
    // A held draft's old copies wait until the new revision is placed, so the folder never lacks the draft.
    const current = d.state === 'held' && d.filedJob !== null ? readPlacement(state.db, d.filedJob, d.accountId) : null;
    if (d.state === 'held' && (d.filedJob === null || (current !== null && !ENDED.has(current.state)))) {
      waiting = true;
      continue;
    }
    const left = [...d.retiredJobs];
    while (left.length > 0) {
      const appendJob = left[0]!;
      await place(ctx, d.accountId, { type: 'imap-sync.record-removal', requestId: `removal:${appendJob}`, appendJob });
      if (state.closed) return false;
      left.shift();
      setRetiredJobs(state.db, d.id, left);
    }
  }
  return waiting;
}

/**
 * One pass over what is owed; runs beside the mailbox (never twice at once).
 * A sync actor that is down or slow leaves the rest for the next tick.
 * Answers whether something waits on the journal and is worth a look soon.
 */
export async function fileOwed(state: OutboxState, ctx: ActorContext): Promise<boolean> {
  if (state.closed) return false;
  // A tick during a pass is not dropped: a send that ended or a draft saved since the pass read its
  // sent copies would otherwise wait for the next idle tick.
  if (state.filing.busy) {
    state.filing.again = true;
    return false;
  }
  state.filing.busy = true;
  try {
    let waiting: boolean;
    do {
      state.filing.again = false;
      await fileSentCopies(state, ctx);
      await fileDrafts(state, ctx);
      waiting = await removeRetired(state, ctx);
    } while (state.filing.again && !state.closed);
    return waiting;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    ctx.log.warn(
      { event: 'outbox.filing-deferred', code: err.code },
      'outbox.filing-deferred: the account sync actor did not take the placement; retried at the next tick',
    );
    return false;
  } finally {
    state.filing.busy = false;
  }
}
