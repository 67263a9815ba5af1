/**
 * The model's attention, computed by the fast path of TensorFlow.js's
 * WebAssembly backend. That backend hands a product of matrices to XNNPACK
 * only when it is a single product of two untransposed matrices; a batch of
 * products, or one with a transposed side, goes through a plain loop. The
 * attention of USE-lite is made of exactly those: per head, Q·Kᵀ and
 * weights·V, batched over the heads. Four [128×64]·[128×64]ᵀ products took
 * 2.5 ms batched and 0.45 ms as four untransposed products (EBK,
 * docs/performance.md "Semantic backfill").
 *
 * `productsOneByOne` puts a kernel in BatchMatMul's place on the wasm
 * backend of the calling thread: it transposes a transposed side once
 * (itself a cheap copy), then hands the backend's own kernel the batch's
 * products one at a time, and joins them. Anything else (a single
 * untransposed product, batches that broadcast) goes to the backend's
 * kernel as before. The sums are the same products in another order, so a
 * vector moves in its seventh decimal at most.
 *
 * Importable from `actors/embedding/` only (local-model.ts).
 */

/** What a kernel sees of a tensor: its data's handle in the backend, and its shape. */
type TensorInfo = { dataId: object; shape: number[]; dtype: string };
type Backend = { disposeData(dataId: object): unknown };
type KernelArgs = { inputs: Record<string, TensorInfo> | TensorInfo[]; backend: Backend; attrs?: Record<string, unknown> };
type KernelFunc = (args: KernelArgs) => TensorInfo;
/** The part of @energetic-ai/core's (tfjs-core's) kernel registry used here. */
export type KernelRegistry = {
  getKernel(kernelName: string, backendName: string): { kernelFunc: KernelFunc } | undefined;
  unregisterKernel(kernelName: string, backendName: string): void;
  registerKernel(config: { kernelName: string; backendName: string; kernelFunc: KernelFunc }): void;
};

const BACKEND = 'wasm';
/** Marks the kernel this module put in place. */
const INSTALLED = Symbol('mailcairn.products-one-by-one');

/** Replaces the wasm backend's BatchMatMul as described above; false when a kernel it needs is missing (then nothing changes). */
export function productsOneByOne(registry: KernelRegistry): boolean {
  const kernel = (name: string): KernelFunc | undefined => registry.getKernel(name, BACKEND)?.kernelFunc;
  const matMul = kernel('BatchMatMul');
  const transpose = kernel('Transpose');
  const slice = kernel('Slice');
  const concat = kernel('Concat');
  const reshape = kernel('Reshape');
  if (!matMul || !transpose || !slice || !concat || !reshape) return false;
  // Put in place once per thread: a second call (a model loaded again on the same thread) keeps the first.
  if (INSTALLED in matMul) return true;

  const oneByOne: KernelFunc = (args) => {
    const { a, b } = args.inputs as Record<string, TensorInfo>;
    const transposeA = args.attrs?.transposeA === true;
    const transposeB = args.attrs?.transposeB === true;
    const rank = a!.shape.length;
    const outer = a!.shape.slice(0, -2);
    const batch = outer.reduce((n, d) => n * d, 1);
    const sameBatch = b!.shape.length === rank && b!.shape.slice(0, -2).every((d, i) => d === outer[i]);
    if (!sameBatch || (batch === 1 && !transposeA && !transposeB)) return matMul(args);

    const backend = args.backend;
    const made: TensorInfo[] = [];
    const keep = (t: TensorInfo): TensorInfo => {
      made.push(t);
      return t;
    };
    try {
      const swapLast = [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2];
      const left = transposeA ? keep(transpose({ inputs: { x: a! }, backend, attrs: { perm: swapLast } })) : a!;
      const right = transposeB ? keep(transpose({ inputs: { x: b! }, backend, attrs: { perm: swapLast } })) : b!;
      const m = left.shape[rank - 2]!;
      const k = left.shape[rank - 1]!;
      const n = right.shape[rank - 1]!;
      const left3 = keep(reshape({ inputs: { x: left }, backend, attrs: { shape: [batch, m, k] } }));
      const right3 = keep(reshape({ inputs: { x: right }, backend, attrs: { shape: [batch, k, n] } }));
      const products: TensorInfo[] = [];
      for (let i = 0; i < batch; i++) {
        const ai = batch === 1 ? left3 : keep(slice({ inputs: { x: left3 }, backend, attrs: { begin: [i, 0, 0], size: [1, m, k] } }));
        const bi = batch === 1 ? right3 : keep(slice({ inputs: { x: right3 }, backend, attrs: { begin: [i, 0, 0], size: [1, k, n] } }));
        products.push(keep(matMul({ inputs: { a: ai, b: bi }, backend, attrs: { transposeA: false, transposeB: false } })));
      }
      const joined = products.length === 1 ? products[0]! : keep(concat({ inputs: products, backend, attrs: { axis: 0 } }));
      // The answer shares the joined data (a reshape adds a reference), which outlives the release below.
      return reshape({ inputs: { x: joined }, backend, attrs: { shape: [...outer, m, n] } });
    } finally {
      for (const t of made) backend.disposeData(t.dataId);
    }
  };

  registry.unregisterKernel('BatchMatMul', BACKEND);
  registry.registerKernel({ kernelName: 'BatchMatMul', backendName: BACKEND, kernelFunc: Object.assign(oneByOne, { [INSTALLED]: true }) });
  return true;
}
