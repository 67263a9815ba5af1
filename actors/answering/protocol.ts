/**
 * Public surface of the answering actor (`answering`): the one runner of
 * `ask_mail` conversations with the declared chat endpoint, the holder of
 * that endpoint's "refused within the last minute" state, of the durable
 * question allowance, and the one writer of the answering audit
 * (docs/ask-mail.md). Everything outside `actors/answering/` imports this
 * file only.
 *
 * - The MCP layer asks `answering.availability` before publishing or running
 *   `ask_mail`, and `answering.ask` to run one question.
 * - The run retrieves through the query pool (`mail-query.search`, then
 *   `mail-query.get-content`) with the caller's scope bound outside the
 *   conversation, and places each lookup through the embedding actor.
 *
 * No message, reply or log line of this actor carries the question, the
 * answer, an extract, a subject or the API key, except the reply to the
 * asker itself (the answer and its citations).
 */
import { z } from 'zod';
import type { EmbeddingProtocol } from '../embedding/protocol.ts';
import type { MailReadsProtocol } from '../mail-query/protocol/mail-reads.ts';
import { QueryScope } from '../mail-query/protocol/query-scope.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import { type ActorId, actorIdSchema, type ProtocolOf } from '../../runtime/ref.ts';
import type { RunRecord } from '../../runtime/store/answering/audit.ts';
import type { RunDegradation, RunEnding } from '../../runtime/store/answering/run-vocabulary.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';

export const ANSWERING_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const ANSWERING_ID: ActorId<AnsweringProtocol> = 'answering';

/** Characters a question may have; a longer one is refused (51001), never cut. */
export const MAX_QUESTION_CHARACTERS = 4_000;
/** Characters of the answer returned; a longer answer is cut and `answerCut` says so. */
export const MAX_ANSWER_CHARACTERS = 8_000;
/** Citations returned at most; `citationsCut` says when the run read more. */
export const MAX_CITATIONS = 50;
/** Version of the instruction the model is given (recorded in the audit with every run). */
export const INSTRUCTION_VERSION = 'ask-mail/1';
/** How long a refused credential withholds `ask_mail` (spec: "within the last minute"). */
export const REFUSAL_WITHHOLDS_MS = 60_000;

/** How a run ended and degraded, as the audit records them (the store's vocabulary of `answering_runs`). */
export { RUN_DEGRADATIONS, RUN_ENDINGS, type RunDegradation, type RunEnding } from '../../runtime/store/answering/run-vocabulary.ts';

export const AnsweringConfig = z.strictObject({
  store: StoreSlice,
  /** The chat endpoint questions are answered with (the first of `Answering:Endpoints`); null: none declared. */
  endpoint: z
    .strictObject({
      alias: z.string().min(1),
      baseAddress: z.string().min(1),
      model: z.string().min(1),
      apiKeyRef: z.string().nullable(),
      deadlineMs: z.number().int().positive(),
      maxCalls: z.number().int().min(1),
      maxInputCharacters: z.number().int().min(1),
    })
    .nullable(),
  allowance: z.strictObject({ maxQuestions: z.number().int().min(1), periodMs: z.number().int().positive() }),
  lookup: z.strictObject({ passages: z.number().int().min(1).max(10), charactersPerPassage: z.number().int().min(1) }),
  audit: z.strictObject({ enabled: z.boolean(), retentionMs: z.number().int().positive() }),
  /** Where retrieval runs: the query pool and the embedding actor. */
  queryPoolId: actorIdSchema<MailReadsProtocol>(),
  embeddingId: actorIdSchema<EmbeddingProtocol>(),
});
export type AnsweringConfig = z.infer<typeof AnsweringConfig>;

// ---------------------------------------------------------------- the tool

export const AskMailInput = z.strictObject({
  question: z.string().trim().min(1).max(MAX_QUESTION_CHARACTERS).describe(`The question, at most ${MAX_QUESTION_CHARACTERS} characters`),
  accounts: z.array(z.string().min(1).max(200)).min(1).max(50).optional().describe('Account ids to answer from; default all'),
  folders: z.array(z.string().min(1).max(200)).min(1).max(50).optional().describe('Folder aliases to answer from; default all'),
});
export type AskMailInput = z.infer<typeof AskMailInput>;

const Instant = z.iso.datetime();

export const Citation = z.strictObject({
  storedEmailId: z.string(),
  accountId: z.string(),
  folderAlias: z.string(),
  subject: z.string().optional(),
  receivedAt: Instant.optional(),
  /** The answer cites this message; false: the run read it, the answer does not rest on it. */
  cited: z.boolean(),
});
export type Citation = z.infer<typeof Citation>;

export const AskMailResult = z.strictObject({
  answer: z.string(),
  /** Every message the run read, in the order it was first reached; at most MAX_CITATIONS. */
  citations: z.array(Citation),
  /** Present (true) when the answer was longer than MAX_ANSWER_CHARACTERS and was cut. */
  answerCut: z.literal(true).optional(),
  /** Present (true) when the run read more messages than the citations list holds. */
  citationsCut: z.literal(true).optional(),
  /** Present (true) when a lookup found more than it passed on, or an extract was cut. */
  retrievalCut: z.literal(true).optional(),
  /** Lookups the model made. */
  lookupCount: z.number().int().nonnegative(),
  /** `hybrid` when every lookup ranked both ways; `lexical` when any ranked by words alone. */
  retrievalMode: z.enum(['hybrid', 'lexical']),
});
export type AskMailResult = z.infer<typeof AskMailResult>;

/**
 * Whether `ask_mail` is offered (agent-surface "ask_mail availability"):
 * - `offered`: an endpoint is declared, it has not refused within the last minute, and an embedding profile can place a query;
 * - `not-declared`: no chat endpoint: no questions are answered at all;
 * - `impossible`: answers are impossible right now (`provider-refused` until `until`, or `no-query-placement`).
 */
export const Availability = z.discriminatedUnion('state', [
  z.strictObject({ state: z.literal('offered') }),
  z.strictObject({ state: z.literal('not-declared') }),
  z.strictObject({ state: z.literal('impossible'), reason: z.enum(['provider-refused', 'no-query-placement']), until: Instant.nullable() }),
]);
export type Availability = z.infer<typeof Availability>;

export const AnsweringMessage = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('answering.availability') }),
  /** One question, with the caller's whole scope (the pool checks it again) and the caller's narrowing. */
  z.strictObject({ type: z.literal('answering.ask'), input: AskMailInput, scope: QueryScope }),
]);
export type AnsweringMessage = z.input<typeof AnsweringMessage>;

export type AnsweringProtocol = ProtocolOf<AnsweringMessage, { 'answering.availability': Availability; 'answering.ask': AskMailResult }>;

// ---------------------------------------------------------------- the audit

/**
 * One audit entry as the actor writes it: per account of the run, sharing
 * `runId`; each read is a message with its position in first-reach order
 * (from 0) and whether the answer cited it. Holds no content. The store's
 * `RunRecord` narrowed to the endings and degradations this build declares.
 */
export type AnsweringRunRecord = RunRecord & { ending: RunEnding; degradation: RunDegradation[] };
