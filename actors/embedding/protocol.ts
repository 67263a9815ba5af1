/**
 * Public surface of the embedding actor (`embedding`): the one writer of
 * embedding generations and passage vectors, and the one holder of the
 * provider (its connection, its circuit, or the local model). Everything
 * outside `actors/embedding/` imports this file only.
 *
 * - The admin routes ask it for the status, the activation forecast, the
 *   activation itself and the cancellation of a reindex (admin-surface.md
 *   "Embedding status and activation", "Embedding routes").
 * - `search_emails` asks it to place the query (`embedding.place-query`)
 *   and passes the vector to the query pool, which ranks exactly.
 * - The derivation writer tells it when new mail was derived
 *   (`embedding.derived`), so arrivals are embedded without waiting for the
 *   next backfill pass.
 *
 * Activation is an operator's act: the actor never begins a generation by
 * itself. A declared profile (`Embeddings`) does nothing until activated.
 * No message, reply or log line of this actor carries passage text, a query,
 * a subject or the API key.
 */
import { z } from 'zod';
import { WorkProgress } from '../../runtime/work-progress.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';

export const EMBEDDING_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const EMBEDDING_ID: ActorId<EmbeddingProtocol> = 'embedding';

/** Provider kinds, as stored in `embedding_generations.provider` and shown on the status. */
export const ProviderKind = z.enum(['openai-compatible', 'local']);
export type ProviderKind = z.infer<typeof ProviderKind>;

/** The model shipped with Mailcairn (`Embeddings:Provider Local`), named where the configuration is. */
export { LOCAL_DIMENSIONS, LOCAL_MODEL } from '../../config/schema/embeddings.ts';

/** What a generation is made with; two profiles that differ in any field are two generations. */
export const Profile = z.strictObject({
  provider: ProviderKind,
  model: z.string().min(1),
  dimensions: z.number().int().min(1).max(8192),
  distance: z.enum(['cosine', 'l2']),
});
export type Profile = z.infer<typeof Profile>;

export const EmbeddingConfig = z.strictObject({
  store: StoreSlice,
  /** The declared profile and how to reach its provider; null when `Embeddings` declares none. */
  declared: z
    .strictObject({
      profile: Profile,
      /** OpenAI-compatible: the base address; local: null. */
      baseAddress: z.string().nullable(),
      apiKeyRef: z.string().nullable(),
      requestTimeoutMs: z.number().int().positive(),
      /** Passages per provider call. */
      batchSize: z.number().int().min(1),
      /** Threads of the local model (Embeddings:LocalThreads resolved; 1 with another provider, for a local generation still serving). */
      localThreads: z.number().int().min(1).max(16),
      /** Passages of each message embedded, from its start (Embeddings:PassagesPerMessage resolved); null: every passage. */
      passagesPerMessage: z.number().int().min(1).max(64).nullable(),
    })
    .nullable(),
  spend: z.strictObject({ maxCharactersPerPeriod: z.number().int().positive(), periodMs: z.number().int().positive() }),
  backfill: z.strictObject({ enabled: z.boolean(), intervalMs: z.number().int().positive(), batchSize: z.number().int().min(1) }),
});
export type EmbeddingConfig = z.infer<typeof EmbeddingConfig>;

const Instant = z.iso.datetime();
const Count = z.number().int().nonnegative();

/** `GET /api/admin/embeddings`: every status line of the spec, in this shape. */
export const EmbeddingStatus = z.strictObject({
  /** The profile `Embeddings` declares; null: none declared. */
  declared: Profile.nullable(),
  /** The generation answering searches, with how much of the stored mail it covers; null: none activated (semantic search inactive). */
  serving: Profile.extend({
    generation: z.number().int().positive(),
    servingSince: Instant,
    embeddedEmailCount: Count,
    emailCount: Count,
    /** The same counts as progress, with the pace of the last passes and the time left (ours: the spec leaves field names open). */
    progress: WorkProgress,
  }).nullable(),
  /** A generation being built for a changed profile while the serving one answers; `none` when there is none. */
  reindex: z.discriminatedUnion('state', [
    z.strictObject({ state: z.literal('none') }),
    z.strictObject({
      state: z.literal('building'),
      generation: z.number().int().positive(),
      profile: Profile,
      startedAt: Instant,
      embeddedEmailCount: Count,
      emailCount: Count,
      progress: WorkProgress,
    }),
  ]),
  /** When the next backfill pass runs; null when just started, when `EmbeddingBackfill:Enabled` is false, or when nothing is activated. */
  nextPassAt: Instant.nullable(),
  /** Why embedding work is waiting, if it is: `spend` (the period's characters are used), `provider` (the provider is failing or its circuit is open). */
  waitingFor: z.enum(['spend', 'provider']).nullable(),
  /** The declared provider's health as last seen; `not-declared` when no profile is declared. */
  provider: z.strictObject({
    state: z.enum(['healthy', 'failing', 'open', 'not-declared']),
    since: Instant.nullable(),
    /** The class of the last failure (`http-503`, `timeout`, …), never the provider's words. */
    lastFailure: z.string().nullable(),
  }),
  spend: z.strictObject({
    usedCharacters: Count,
    maxCharacters: Count,
    periodStartedAt: Instant,
    /** The period rollover instant. */
    periodEndsAt: Instant,
  }),
});
export type EmbeddingStatus = z.infer<typeof EmbeddingStatus>;

/** `GET /api/admin/embeddings/activation`: what activating the declared profile would do and cost. Writes nothing. */
export const ActivationForecast = z.strictObject({
  declared: Profile.nullable(),
  /** `start`: a first generation; `reindex`: a new generation beside the serving one; `serving`: the declared profile already serves (activation spends nothing); `building`: it is being built already; `not-declared`: nothing to activate. */
  effect: z.enum(['start', 'reindex', 'serving', 'building', 'not-declared']),
  passages: Count,
  characters: Count,
  /** Characters / 4, rounded up: the usual estimate for English text; the provider's tokenizer decides. */
  approximateTokens: Count,
  /** Periods of `MaxInputCharactersPerPeriod` the characters need (0 when nothing is sent). */
  periods: Count,
  /** One sentence an operator reads before agreeing. Names no mail. */
  forecast: z.string(),
});
export type ActivationForecast = z.infer<typeof ActivationForecast>;

export const ActivationResult = z.strictObject({
  /** `started` / `reindexing`: a generation was begun now; `serving` / `building`: nothing was begun (nothing spent). */
  outcome: z.enum(['started', 'reindexing', 'serving', 'building']),
  generation: z.number().int().positive(),
  forecast: ActivationForecast,
});
export type ActivationResult = z.infer<typeof ActivationResult>;

export const CancellationResult = z.strictObject({
  /** The generation whose building stopped; null when no reindex was under way (succeeds having stopped nothing). */
  cancelled: z.number().int().positive().nullable(),
  /** The generation still serving, if any. */
  serving: z.number().int().positive().nullable(),
});
export type CancellationResult = z.infer<typeof CancellationResult>;

/**
 * The query placed by the serving generation's provider. `inactive`: no
 * generation serves; `degraded`: one serves but its provider could not embed
 * the query now (the search is lexical and says so).
 */
export const PlacedQuery = z.discriminatedUnion('semanticSearch', [
  z.strictObject({ semanticSearch: z.literal('inactive') }),
  z.strictObject({ semanticSearch: z.literal('degraded') }),
  z.strictObject({
    semanticSearch: z.literal('available'),
    generation: z.number().int().positive(),
    vector: z.custom<Float32Array>((v) => v instanceof Float32Array, { error: 'a Float32Array' }),
  }),
]);
export type PlacedQuery = z.infer<typeof PlacedQuery>;

/** Whether a query could be placed now (a generation serves and its provider's circuit is not open): asked before `ask_mail` is offered. Sends nothing. */
export const Readiness = z.strictObject({ canPlaceQuery: z.boolean() });
export type Readiness = z.infer<typeof Readiness>;

/** The messages the actor takes from others (its timer is private to actor.ts). */
export const EmbeddingMessage = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('embedding.status') }),
  z.strictObject({ type: z.literal('embedding.readiness') }),
  z.strictObject({ type: z.literal('embedding.forecast') }),
  z.strictObject({ type: z.literal('embedding.activate') }),
  z.strictObject({ type: z.literal('embedding.cancel-reindex') }),
  /** The text is the query as the caller wrote it (never logged). */
  z.strictObject({ type: z.literal('embedding.place-query'), text: z.string() }),
  /** A tell: derived mail is waiting to be embedded. */
  z.strictObject({ type: z.literal('embedding.derived') }),
]);
export type EmbeddingMessage = z.input<typeof EmbeddingMessage>;

export type EmbeddingProtocol = ProtocolOf<
  EmbeddingMessage,
  {
    'embedding.status': EmbeddingStatus;
    'embedding.readiness': Readiness;
    'embedding.forecast': ActivationForecast;
    'embedding.activate': ActivationResult;
    'embedding.cancel-reindex': CancellationResult;
    'embedding.place-query': PlacedQuery;
    'embedding.derived': undefined;
  }
>;

/** Characters sent per approximate token (ActivationForecast.approximateTokens). */
export const CHARACTERS_PER_TOKEN = 4;
