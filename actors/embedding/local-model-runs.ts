/**
 * What a thread of the local model does, whichever pool it serves: loads
 * USE-lite on its first run and keeps it, and embeds each run's texts.
 * `local-model-task.ts` (the backfill's threads, below normal priority) and
 * `local-query-task.ts` (the thread kept for search queries, at the
 * process's priority) are this with their own name and priority.
 *
 * Failures are answered as E_EMBED_UNAVAILABLE with `failure` `model-load`
 * (a load that failed is tried again by the next run) or `inference`; never
 * with the cause's words, which may carry a text.
 */
import { performance } from 'node:perf_hooks';
import { transfer } from '../../runtime/actor.ts';
import { errorClass } from '../../runtime/error-class.ts';
import { AppError } from '../../runtime/errors.ts';
import { definePoolTask } from '../../runtime/pool/task.ts';
import { infer, type LoadedModel, loadLocalModel } from './local-model.ts';
import { type LocalInferReply, LocalModelMessage, type ModelLoad, type RunFailure } from './local-model-protocol.ts';

/** Loaded on the thread's first run and kept; a thread runs one task at a time, so two runs never load it together. */
let model: LoadedModel | null = null;

/** The pool task of a model thread named `name`, whose nice value is `nice` (null: unknown), reported with the load. */
export function modelTask(name: string, nice: number | null) {
  return definePoolTask({
    name,
    messages: LocalModelMessage,
    handle: async (msg) => {
      const { model: ready, load } = await loaded(nice);
      let vectors: Float32Array[];
      try {
        vectors = await infer(ready, msg.texts, msg.maxChars);
      } catch {
        throw failure('inference');
      }
      // Each vector owns its buffer (infer slices them apart), so moving them detaches nothing else.
      return transfer<LocalInferReply>(
        { vectors, load },
        vectors.map((v) => v.buffer as ArrayBuffer),
      );
    },
  });
}

/** The model, and what loading it took when this run is the one that loaded it (a failed load is tried again by the next run). */
async function loaded(nice: number | null): Promise<{ model: LoadedModel; load: ModelLoad | null }> {
  if (model !== null) return { model, load: null };
  const started = performance.now();
  try {
    model = await loadLocalModel();
  } catch (err) {
    throw failure('model-load', errorClass(err));
  }
  return {
    model,
    load: { ms: Math.round(performance.now() - started), backend: model.core.getBackend(), simd: model.simd, oneByOne: model.oneByOne, nice },
  };
}

/** `reason`: the cause's error class only (local-use-lite.ts logs it), never its message. */
function failure(kind: RunFailure, reason?: string): AppError {
  return new AppError('E_EMBED_UNAVAILABLE', { details: { failure: kind, attempts: 1, ...(reason === undefined ? {} : { reason }) } });
}
