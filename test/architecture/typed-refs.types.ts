/**
 * Type-level proof that refs are typed by their target's protocol: each
 * `@ts-expect-error` below is a message the target does not accept, or a
 * reply member it does not answer, and `tsc -p tsconfig.json --noEmit`
 * fails if any of them compiles (an unused `@ts-expect-error` is an error).
 * Nothing here runs: it is not a `*.test.ts`, and the refs are declared.
 */
import type { AnsweringProtocol } from '../../actors/answering/protocol.ts';
import { ActivationResult, EMBEDDING_ID, type EmbeddingProtocol, EmbeddingStatus, PlacedQuery } from '../../actors/embedding/protocol.ts';
import { RecordChangesReply, syncActorId } from '../../actors/imap-sync/protocol.ts';
import type { MailQueryProtocol } from '../../actors/mail-query/protocol.ts';
import type { AttachmentSourceProtocol } from '../../actors/mail-query/protocol/attachment-source.ts';
import type { MailReadsProtocol } from '../../actors/mail-query/protocol/mail-reads.ts';
import { OperatorReply, type OutboxProtocol, SendReply } from '../../actors/outbox/protocol.ts';
import { REPLAY_GUARD_ID } from '../../actors/replay-guard/protocol.ts';
import type { ActorContext } from '../../runtime/actor.ts';
import type { ActorRef, Askable } from '../../runtime/ref.ts';
import type { Supervisor } from '../../runtime/supervisor/supervisor.ts';

declare const supervisor: Supervisor;
declare const ctx: ActorContext;
declare const embedding: ActorRef<EmbeddingProtocol>;
declare const answering: Askable<AnsweringProtocol>;
declare const outbox: Askable<OutboxProtocol>;
declare const queryPool: Askable<MailQueryProtocol>;
declare const attachments: Askable<AttachmentSourceProtocol>;

export async function embeddingChecks(): Promise<void> {
  const status = await embedding.ask({ type: 'embedding.status' });
  status.serving satisfies EmbeddingStatus['serving'];
  // @ts-expect-error the status has no such member
  status.generation;
  // @ts-expect-error not a message of the embedding actor
  await embedding.ask({ type: 'embedding.reindex' });
  // @ts-expect-error place-query needs its text
  await embedding.ask({ type: 'embedding.place-query' });
  // @ts-expect-error a member the message does not have
  await embedding.ask({ type: 'embedding.status', verbose: true });
  // @ts-expect-error the reply schema of another message
  await embedding.ask({ type: 'embedding.status' }, { reply: ActivationResult });
  await embedding.ask({ type: 'embedding.place-query', text: 'q' }, { reply: PlacedQuery });
  embedding.tell({ type: 'embedding.derived' });
  // @ts-expect-error a tell is checked the same way
  embedding.tell({ type: 'embedding.derive' });
  // The id carries the protocol: a ref made from it is typed.
  const byId = await supervisor.ref(EMBEDDING_ID).ask({ type: 'embedding.readiness' });
  byId.canPlaceQuery satisfies boolean;
  // @ts-expect-error readiness answers canPlaceQuery only
  byId.ready;
}

export async function answeringChecks(): Promise<void> {
  const availability = await answering.ask({ type: 'answering.availability' });
  if (availability.state === 'impossible') availability.reason satisfies 'provider-refused' | 'no-query-placement';
  // @ts-expect-error answering.ask carries the input and the caller's scope
  await answering.ask({ type: 'answering.ask', input: { question: 'when?' } });
  const answer = await answering.ask({ type: 'answering.ask', input: { question: 'when?' }, scope: { accounts: [] } });
  answer.citations satisfies readonly unknown[];
  // @ts-expect-error the result has no sources member
  answer.sources;
}

export async function outboxChecks(): Promise<void> {
  const sent = await outbox.ask(
    { type: 'outbox.send-draft', requester: 'agent', permissions: [], draftId: 1, idempotencyKey: 'k' },
    { reply: SendReply, deadlineMs: 1_000 },
  );
  if (sent.outcome === 'recorded') sent.outgoingEmailId satisfies string;
  // @ts-expect-error a cancellation answers an operator outcome, not a send
  await outbox.ask({ type: 'outbox.cancel', outgoing: 1, by: 'op', requester: null }, { reply: SendReply });
  await outbox.ask({ type: 'outbox.cancel', outgoing: 1, by: 'op', requester: null }, { reply: OperatorReply });
  // @ts-expect-error draft ids are row numbers here, not the tools' `d…` strings
  await outbox.ask({ type: 'outbox.delete-draft', requester: 'agent', permissions: [], draftId: 'd1' });
  const deleted = await outbox.ask({ type: 'outbox.delete-draft', requester: 'agent', permissions: [], draftId: 1 });
  // @ts-expect-error a deletion never answers `saved`, so it has no revision
  if (deleted.outcome === 'deleted') deleted.revision;
}

export async function syncActorChecks(): Promise<void> {
  // Between actors: the target's id names its protocol.
  const recorded = await ctx.ask(
    syncActorId('alice'),
    { type: 'imap-sync.record-changes', messageId: 1, requester: 'agent', requestId: null, changes: [{ kind: 'set-seen', value: true }] },
    { reply: RecordChangesReply },
  );
  if (recorded.outcome === 'recorded') recorded.changes satisfies readonly unknown[];
  // @ts-expect-error a change kind the journal does not know
  await ctx.ask(syncActorId('alice'), { type: 'imap-sync.record-changes', messageId: 1, requester: 'a', requestId: null, changes: [{ kind: 'archive' }] });
  // @ts-expect-error the sync actor is not the embedding actor
  ctx.tell(syncActorId('alice'), { type: 'embedding.derived' });
  ctx.tell(EMBEDDING_ID, { type: 'embedding.derived' });
  // @ts-expect-error the replay guard answers claims only
  await ctx.ask(REPLAY_GUARD_ID, { type: 'replay-guard.prune' });
  const run = await ctx.ask(syncActorId('alice'), { type: 'imap-sync.run' });
  run.hasMore satisfies boolean;
  // @ts-expect-error a run summary has no folders member
  run.folders;
}

export async function queryPoolChecks(): Promise<void> {
  // @ts-expect-error the pool answers reads; it writes nothing
  await queryPool.ask({ type: 'mail-query.delete-email', messageId: 1 });
  // @ts-expect-error the status of the embedding actor is not asked of the pool
  await queryPool.ask({ type: 'embedding.status' }, { reply: EmbeddingStatus });
}

export async function consumerContractChecks(): Promise<void> {
  // The whole pool is usable where a consumer's contract is asked for ...
  const reads: Askable<MailReadsProtocol> = queryPool;
  const accounts = await reads.ask({ type: 'mail-query.list-accounts', scope: { accounts: [] }, input: {} });
  accounts.accounts satisfies readonly unknown[];
  // @ts-expect-error ... and a consumer asks only what its contract names
  await reads.ask({ type: 'mail-query.attachment', messageId: 1, index: 0, accounts: [] });
  // @ts-expect-error a consumer's ref is not the whole pool
  const _whole: Askable<MailQueryProtocol> = reads;
  // @ts-expect-error the store is the pool's, given at creation: no message carries it
  await attachments.ask({ type: 'mail-query.attachment', messageId: 1, index: 0, accounts: [], store: {} });
}
