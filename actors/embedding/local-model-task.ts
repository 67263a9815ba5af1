/**
 * A thread of the local model (`embedding-local`): loads USE-lite on its
 * first run and keeps it, and embeds each run's texts. Its priority is
 * lowered when it starts (runtime/thread-priority.ts): the model can always
 * wait, searches and the mirror cannot.
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
import { lowerThreadPriority } from '../../runtime/thread-priority.ts';
import { infer, type LoadedModel, loadLocalModel } from './local-model.ts';
import { type LocalInferReply, LocalModelMessage, type ModelLoad, type RunFailure } from './local-model-protocol.ts';

const nice = lowerThreadPriority();

/** Loaded on the thread's first run and kept; a thread runs one task at a time, so two runs never load it together. */
let model: LoadedModel | null = null;

export default definePoolTask({
  name: 'embedding-local',
  messages: LocalModelMessage,
  handle: async (msg) => {
    const { model: ready, load } = await loaded();
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

/** The model, and what loading it took when this run is the one that loaded it (a failed load is tried again by the next run). */
async function loaded(): Promise<{ model: LoadedModel; load: ModelLoad | null }> {
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
