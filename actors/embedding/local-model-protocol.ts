/**
 * The messages of the local model's threads (`embedding-local`, a pool the
 * local provider starts on its first texts: local-use-lite.ts): a run of a
 * few texts in, their vectors out (moved back, not copied). Private to
 * actors/embedding/.
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { PoolEntry } from '../../runtime/pool/pool.ts';
import type { ProtocolOf } from '../../runtime/ref.ts';

/** The task module of the model's threads, named as a URL so that the provider starts them without importing the model. */
export const LOCAL_MODEL_TASK: PoolEntry<LocalModelProtocol> = moduleUrl('./local-model-task.ts', import.meta.url);
/** The task module of the thread kept for search queries (the same runs, at the process's priority). */
export const LOCAL_QUERY_TASK: PoolEntry<LocalModelProtocol> = moduleUrl('./local-query-task.ts', import.meta.url);

/** The most texts one run may carry: a run is the unit calls take turns by (local-use-lite.ts `BATCH_TEXTS`). */
export const MAX_RUN_TEXTS = 64;

export const LocalModelMessage = z.strictObject({
  type: z.literal('embedding.local-infer'),
  texts: z.array(z.string()).min(1).max(MAX_RUN_TEXTS),
  /** Characters of each text the model is given (the provider's `maxInputCharacters`). */
  maxChars: z.number().int().positive(),
});

/** What the thread did to load the model, on the run that loaded it (null on every later run). */
export type ModelLoad = { ms: number; backend: string; simd: boolean; oneByOne: boolean; nice: number | null };

export type LocalInferReply = { vectors: Float32Array[]; load: ModelLoad | null };

export type LocalModelProtocol = ProtocolOf<z.input<typeof LocalModelMessage>, { 'embedding.local-infer': LocalInferReply }>;

/** Why a run failed, as the thread reports it (`details.failure` of E_EMBED_UNAVAILABLE). */
export type RunFailure = 'model-load' | 'inference';
