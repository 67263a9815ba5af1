/**
 * The answering actor (`answering`, one per deployment): runs `ask_mail`
 * questions (run.ts) against the declared chat endpoint, retrieving through
 * the query pool with the caller's scope bound here, never by the model.
 *
 * - Availability (docs/ask-mail.md "When it is offered"): offered while an
 *   endpoint is declared, it has not refused its credential within the last
 *   minute, and the embedding actor can place a query.
 * - Before any call a question takes one from the durable period allowance
 *   (runtime/store/answering/allowance.ts); none left is 57001.
 * - Runs go on side by side (`later`): one slow endpoint call never holds
 *   the next question or an availability check.
 * - After every run that began, one audit entry per account of the run's
 *   scope (when `Answering:Audit:Enabled`), sharing the run id; entries
 *   older than the retention are pruned as new ones are written.
 *
 * Log lines carry the run id, the ending, counts and codes: never the
 * question, the answer, an extract, a subject or an address.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { defineActor, later, type ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { allowancePeriodStart, takeQuestion } from '../../runtime/store/answering/allowance.ts';
import { pruneAnsweringRuns, recordAnsweringRuns } from '../../runtime/store/answering/audit.ts';
import { PlacedQuery, Readiness } from '../embedding/protocol.ts';
import { GetContentReply, SearchEmailsResult } from '../mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../mail-query/protocol/query-scope.ts';
import { decodeStoredEmailId } from '../mail-query/protocol/stored-email-id.ts';
import { createChatClient, type ChatClient } from './chat-client.ts';
import {
  AnsweringConfig,
  AnsweringMessage,
  type AskMailInput,
  type AskMailResult,
  type Availability,
  INSTRUCTION_VERSION,
  REFUSAL_WITHHOLDS_MS,
  type AnsweringRunRecord,
} from './protocol.ts';
import { type FoundMessage, type LookupArgs, type LookupResult, type RunOutcome, runQuestion } from './run.ts';

/** How long a lookup waits for its query to be placed before it ranks by words alone. */
const PLACE_QUERY_DEADLINE_MS = 5_000;
/** Audit entries pruned per run written, at most. */
const PRUNE_ROWS = 500;

type Msg = z.infer<typeof AnsweringMessage>;

type State = {
  config: AnsweringConfig;
  db: Database;
  chat: ChatClient | null;
  /** Until when the endpoint's refusal withholds `ask_mail` (epoch ms). */
  refusedUntil: number;
  abort: AbortController;
};

async function availability(state: State, ctx: ActorContext): Promise<Availability> {
  if (state.config.endpoint === null) return { state: 'not-declared' };
  if (Date.now() < state.refusedUntil) return { state: 'impossible', reason: 'provider-refused', until: new Date(state.refusedUntil).toISOString() };
  const ready = await ctx
    .ask(state.config.embeddingId, { type: 'embedding.readiness' }, { reply: Readiness, deadlineMs: PLACE_QUERY_DEADLINE_MS })
    .catch(() => ({ canPlaceQuery: false }));
  return ready.canPlaceQuery ? { state: 'offered' } : { state: 'impossible', reason: 'no-query-placement', until: null };
}

/** The 56001 sentence: whether no questions are answered at all, or answers are impossible right now. */
function withheld(a: Exclude<Availability, { state: 'offered' }>): AppError {
  const message =
    a.state === 'not-declared'
      ? 'This deployment answers no questions: no chat endpoint is declared (Answering:Endpoints)'
      : a.reason === 'provider-refused'
        ? `Questions cannot be answered right now: the chat endpoint refused its credential; ask again after ${a.until}`
        : 'Questions cannot be answered right now: no embedding profile can place a query (see mailcairn embedding status)';
  return new AppError('E_ASK_UNAVAILABLE', { message });
}

/** The accounts a run covers: the caller's narrowing, each checked against the scope (53001 before anything is spent). */
function runAccounts(input: AskMailInput, scope: QueryScope): string[] {
  const known = new Set(scope.accounts.map((a) => a.id));
  const accounts = input.accounts ?? [...known];
  const folders = new Set(scope.accounts.filter((a) => accounts.includes(a.id)).flatMap((a) => a.folders));
  if (accounts.some((id) => !known.has(id)) || (input.folders ?? []).some((f) => !folders.has(f))) throw new AppError('E_NOT_FOUND');
  return accounts;
}

async function ask(state: State, ctx: ActorContext, input: AskMailInput, scope: QueryScope): Promise<AskMailResult> {
  const available = await availability(state, ctx);
  if (available.state !== 'offered') throw withheld(available);
  const endpoint = state.config.endpoint!;
  const accounts = runAccounts(input, scope);
  const { maxQuestions, periodMs } = state.config.allowance;
  const period = allowancePeriodStart(Date.now(), periodMs);
  if (!takeQuestion(state.db, period, maxQuestions)) {
    throw new AppError('E_BUDGET_SPENT', {
      message: `The question allowance of this period is spent (Answering:MaxQuestionsPerPeriod); questions are answered again from ${new Date(period + periodMs).toISOString()}`,
    });
  }

  const runId = randomUUID();
  const beganAt = Date.now();
  const deadline = ctx.deadline === null ? [] : [AbortSignal.timeout(Math.max(1, ctx.deadline - beganAt))];
  const signal = AbortSignal.any([state.abort.signal, ...deadline]);
  const remaining = (cap: number) => Math.max(1, Math.min(cap, (ctx.deadline ?? Date.now() + cap) - Date.now()));
  let outcome: RunOutcome;
  try {
    outcome = await runQuestion(input.question, {
      // Each call in the ask's trace: named, since the active context does not follow awaits.
      chat: { complete: (request, callSignal) => state.chat!.complete(request, callSignal, ctx.trace) },
      lookup: (args) => lookup(state, ctx, args, { scope, input, remaining }),
      maxCalls: endpoint.maxCalls,
      maxInputCharacters: endpoint.maxInputCharacters,
      signal,
      now: Date.now,
    });
  } catch (err) {
    // A defect of ours: every other run goes on; this one answers 54001 and the error is logged whole.
    ctx.log.error({ err, event: 'answering.run-defect', runId }, 'answering.run-defect');
    record(state, ctx, { runId, accounts, beganAt, ending: 'failed', degradation: [], reads: [] });
    throw askFailed(runId);
  }

  const reads = outcome.reached.map((r, position) => ({ position, messageId: r.messageId, accountId: r.accountId, cited: outcome.cited.has(r.reference) }));
  record(state, ctx, { runId, accounts, beganAt, ending: outcome.ending, degradation: [...outcome.degradation], reads });
  const failureCode = outcome.failure?.publicCode ?? null;
  ctx.log.info(
    {
      event: 'answering.run',
      runId,
      ending: outcome.ending,
      ...(failureCode !== null ? { code: failureCode } : {}),
      ...(outcome.failure !== undefined ? { failure: outcome.failure.code } : {}),
      calls: outcome.calls,
      charactersSent: outcome.charactersSent,
      lookups: outcome.lookups,
      readCount: outcome.reached.length,
      citedCount: outcome.cited.size,
      durationMs: Date.now() - beganAt,
    },
    'answering.run',
  );

  switch (outcome.ending) {
    case 'answered':
      return outcome.result!;
    case 'calls-bound-reached':
      throw new AppError('E_BUDGET_SPENT', {
        message: `This question reached its cost bound of ${endpoint.maxCalls} calls to the chat endpoint before an answer; ask a narrower question`,
      });
    case 'characters-bound-reached':
      throw new AppError('E_BUDGET_SPENT', {
        message: `This question reached its cost bound of ${endpoint.maxInputCharacters} characters sent to the chat endpoint before an answer; ask a narrower question`,
      });
    case 'provider-refused-credential':
      state.refusedUntil = Date.now() + REFUSAL_WITHHOLDS_MS;
      throw providerFailure(ctx, runId, outcome);
    case 'provider-did-not-answer':
    case 'provider-produced-no-text':
      throw providerFailure(ctx, runId, outcome);
    case 'deadline-passed':
      throw new AppError('E_ACTOR_TIMEOUT');
    case 'failed':
      throw askFailed(runId);
  }
}

/** 71001, 72001 or 73001 in the log; the client sees 54001 (docs/ask-mail.md, "Failures inside a run"). */
function providerFailure(ctx: ActorContext, runId: string, outcome: RunOutcome): AppError {
  const failure = outcome.failure;
  ctx.log.warn(
    { event: 'answering.provider-failed', runId, code: failure?.publicCode ?? null, ...(failure?.details ? { details: failure.details } : {}) },
    'answering.provider-failed',
  );
  return askFailed(runId);
}

/** 54001 naming the run, so an operator finds its log lines (the run id is no content). */
function askFailed(runId: string): AppError {
  return new AppError('E_ASK_FAILED', { message: `The question could not be answered; the reason is in the server log under run ${runId}` });
}

/** One lookup of the model: the query placed if it can be, the search within the bound scope, then the opening of each message found. */
async function lookup(
  state: State,
  ctx: ActorContext,
  args: LookupArgs,
  bound: { scope: QueryScope; input: AskMailInput; remaining(cap: number): number },
): Promise<LookupResult> {
  const { passages, charactersPerPassage } = state.config.lookup;
  const { queryPoolId, embeddingId } = state.config;
  const placed = await ctx
    .ask(embeddingId, { type: 'embedding.place-query', text: args.queryText }, { reply: PlacedQuery, deadlineMs: bound.remaining(PLACE_QUERY_DEADLINE_MS) })
    .catch((): PlacedQuery => ({ semanticSearch: 'degraded' }));
  const semantic = placed.semanticSearch === 'available' ? { semantic: { generation: placed.generation, vector: placed.vector } } : {};
  // The caller's narrowing and the whole scope travel from here; the pool checks both again.
  const narrowing = { ...(bound.input.accounts ? { accounts: bound.input.accounts } : {}), ...(bound.input.folders ? { folders: bound.input.folders } : {}) };
  const search = await ctx.ask(
    queryPoolId,
    { type: 'mail-query.search', scope: bound.scope, input: { ...args, ...narrowing, resultLimit: passages + 1 }, ...semantic },
    { reply: SearchEmailsResult, deadlineMs: bound.remaining(60_000) },
  );
  const matches = search.matches.slice(0, passages);
  let cut = search.matches.length > passages;
  const found: FoundMessage[] = [];
  if (matches.length > 0) {
    const content = await ctx.ask(
      queryPoolId,
      {
        type: 'mail-query.get-content',
        scope: bound.scope,
        input: { storedEmailIds: matches.map((m) => m.storedEmailId) },
        bodyCharacterBudget: charactersPerPassage,
      },
      { reply: GetContentReply, deadlineMs: bound.remaining(60_000) },
    );
    const bodies = new Map(content.emails.flatMap((e) => ('body' in e && e.body !== undefined ? [[e.storedEmailId, e.body] as const] : [])));
    for (const match of matches) {
      const messageId = decodeStoredEmailId(match.storedEmailId);
      if (messageId === null) continue;
      const body = bodies.get(match.storedEmailId);
      let text = body?.text ?? '';
      if (body?.truncatedBy !== undefined) {
        cut = true;
        // A long message: what matched first, then its opening, within the characters per passage.
        if (match.snippets !== undefined && match.snippets.length > 0) text = `Matching excerpts: ${match.snippets.join(' … ')}\n\n${text}`;
        text = [...text].slice(0, charactersPerPassage).join('');
      }
      found.push({
        messageId,
        storedEmailId: match.storedEmailId,
        accountId: match.accountId,
        folderAlias: match.folderAlias,
        subject: match.subject,
        receivedAt: match.receivedAt,
        senderAddress: match.senderAddress,
        text,
      });
    }
  }
  return { found, lexicalOnly: search.retrievalMode === 'lexical', cut };
}

type Ended = Pick<AnsweringRunRecord, 'runId' | 'beganAt' | 'ending' | 'degradation'> & {
  accounts: string[];
  reads: { position: number; messageId: number; accountId: string; cited: boolean }[];
};

/** One audit entry per account of the run, sharing its id; a failure to write is logged and never changes the answer. */
function record(state: State, ctx: ActorContext, run: Ended): void {
  const { audit, endpoint } = state.config;
  if (!audit.enabled) return;
  const endedAt = Date.now();
  const records: AnsweringRunRecord[] = run.accounts.map((accountId) => ({
    runId: run.runId,
    accountId,
    endpointAlias: endpoint!.alias,
    instructionVersion: INSTRUCTION_VERSION,
    beganAt: run.beganAt,
    endedAt,
    ending: run.ending,
    degradation: run.degradation,
    reads: run.reads.filter((r) => r.accountId === accountId).map(({ position, messageId, cited }) => ({ position, messageId, cited })),
  }));
  try {
    recordAnsweringRuns(state.db, records);
    pruneAnsweringRuns(state.db, endedAt - audit.retentionMs, PRUNE_ROWS);
  } catch (err) {
    ctx.log.error({ err, event: 'answering.audit-not-written', runId: run.runId }, 'answering.audit-not-written');
  }
}

export default defineActor({
  name: 'answering',
  config: AnsweringConfig,
  messages: AnsweringMessage,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    const e = config.endpoint;
    const chat = e === null ? null : createChatClient({ baseAddress: e.baseAddress, model: e.model, apiKeyRef: e.apiKeyRef, deadlineMs: e.deadlineMs });
    const state: State = { config, db, chat, refusedUntil: 0, abort: new AbortController() };
    ctx.defer(async () => {
      state.abort.abort();
      await chat?.close();
      db.close();
    });
    return state;
  },
  handle(state, msg: Msg, ctx) {
    switch (msg.type) {
      case 'answering.availability':
        return later(availability(state, ctx));
      case 'answering.ask':
        return later(ask(state, ctx, msg.input, msg.scope));
    }
  },
  stop(state) {
    state.abort.abort();
  },
});
