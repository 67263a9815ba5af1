/**
 * The query pool's contract with the store gauges (runtime/telemetry/store-gauges.ts,
 * wired in service/app.ts): `mail-query.store-gauges` (`StoreGaugesRequest`
 * in, `StoreGaugesReply` out), asked once per metrics collection. The main
 * thread never runs SQL, so the figures are read on a pool thread, in one
 * read transaction. Schemas only; the handler is in ../store-gauges.ts.
 *
 * Every label the reply carries is a configured identifier (account id,
 * folder alias) or a word of a fixed vocabulary (journal state, outbox stage).
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { STAGES } from '../../../runtime/store/outbox/vocabulary.ts';
import { QueryScope } from './query-scope.ts';

/** The change journal's states as the flag tool answers them (imap-sync protocol `ChangeState`). */
export const JOURNAL_STATES = ['pending', 'converging', 'completed', 'dead-lettered'] as const;

export const StoreGaugesRequest = z.strictObject({
  type: z.literal('mail-query.store-gauges'),
  /** The configured accounts and their folder aliases: each gets its points, zero when nothing is stored yet. */
  scope: QueryScope,
  /** `Embeddings:Period`: the spend is the period holding now's. */
  spendPeriodMs: z.number().int().positive(),
  /** Epoch ms of the collection. */
  now: z.number().int(),
  /** Passages of each message that embedding works on (`Embeddings:PassagesPerMessage` resolved); null: every passage. */
  passagesPerMessage: z.number().int().min(1).nullable(),
});
export type StoreGaugesRequest = z.infer<typeof StoreGaugesRequest>;

const Count = z.number().int().nonnegative();

export const StoreGaugesReply = z.strictObject({
  folders: z.array(
    z.strictObject({
      account: z.string(),
      folder: z.string(),
      /** Messages of the folder the mirror holds (tombstones excluded). */
      messages: Count,
      /** Of those, stored and not derived into the search index yet. */
      unindexed: Count,
      /** Epoch ms the folder was last caught up with the server (a run ended `ok` with nothing left to fetch); null: never, among the retained runs. */
      caughtUpAt: z.number().int().nullable(),
    }),
  ),
  journal: z.array(z.strictObject({ account: z.string(), state: z.enum(JOURNAL_STATES), entries: Count })),
  outbox: z.array(z.strictObject({ account: z.string(), stage: z.enum(STAGES), sends: Count })),
  /** Share of embeddable mail the serving generation covers, 0 to 1; 0 with no generation serving. */
  embeddingCoverage: z.number().min(0).max(1),
  /** Characters sent to the embedding provider in the current period. */
  embeddingSpent: Count,
});
export type StoreGaugesReply = z.infer<typeof StoreGaugesReply>;

export type StoreGaugesProtocol = ProtocolOf<z.input<typeof StoreGaugesRequest>, { 'mail-query.store-gauges': StoreGaugesReply }>;
