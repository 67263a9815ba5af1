/**
 * actors/embedding/matrix-products.ts on TensorFlow.js's real WebAssembly
 * backend: with BatchMatMul replaced, batched and transposed products (the
 * model's attention) give what the backend's own kernel gave, to float
 * rounding; a single untransposed product and broadcast batches are still
 * answered; nothing the replacement makes in between stays allocated; and
 * putting it in place twice keeps the first.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import { type KernelRegistry, productsOneByOne } from '../../../actors/embedding/matrix-products.ts';

type Tensor = { shape: number[]; dataSync(): Float32Array; dispose(): void };
type Tf = KernelRegistry & {
  ready(): Promise<void>;
  getBackend(): string;
  randomUniform(shape: number[], min?: number, max?: number, dtype?: string, seed?: number): Tensor;
  matMul(a: Tensor, b: Tensor, transposeA?: boolean, transposeB?: boolean): Tensor;
  engine(): { backend: { numDataIds(): number } };
};

const tf = createRequire(import.meta.url)('@energetic-ai/core') as Tf;

/** The products the model makes (its attention: batched over heads, one side transposed), and the other cases. */
const CASES: Array<{ name: string; a: number[]; b: number[]; transposeA?: boolean; transposeB?: boolean }> = [
  { name: 'Q·Kᵀ over 4 heads', a: [1, 4, 128, 64], b: [1, 4, 128, 64], transposeB: true },
  { name: 'weights·V over 4 heads', a: [1, 4, 128, 128], b: [1, 4, 128, 64] },
  { name: 'a transposed left side, batch 3', a: [3, 16, 8], b: [3, 16, 5], transposeA: true },
  { name: 'both sides transposed', a: [2, 7, 9], b: [2, 11, 7], transposeA: true, transposeB: true },
  { name: 'one untransposed product', a: [32, 48], b: [48, 24] },
  { name: 'one product, right side transposed', a: [32, 48], b: [24, 48], transposeB: true },
  { name: 'a batch against one matrix (broadcast)', a: [4, 8, 6], b: [1, 6, 5] },
];

t.test('batched and transposed products equal the backend kernel’s; nothing left allocated', async (t) => {
  await tf.ready();
  t.equal(tf.getBackend(), 'wasm');
  const inputs = CASES.map((c, i) => ({ ...c, x: tf.randomUniform(c.a, -1, 1, 'float32', 2 * i + 1), y: tf.randomUniform(c.b, -1, 1, 'float32', 2 * i + 2) }));
  const product = (c: (typeof inputs)[number]): { shape: number[]; values: Float32Array } => {
    const out = tf.matMul(c.x, c.y, c.transposeA ?? false, c.transposeB ?? false);
    const answer = { shape: out.shape, values: out.dataSync().slice() };
    out.dispose();
    return answer;
  };
  const before = inputs.map(product);
  t.equal(productsOneByOne(tf), true, 'the kernel was replaced');
  const installed = tf.getKernel('BatchMatMul', 'wasm')?.kernelFunc;
  t.equal(productsOneByOne(tf), true, 'asked again');
  t.equal(tf.getKernel('BatchMatMul', 'wasm')?.kernelFunc, installed, 'the kernel in place is kept, not wrapped again');
  const held = tf.engine().backend.numDataIds();
  const after = inputs.map(product);
  t.equal(tf.engine().backend.numDataIds(), held, 'every transpose, slice and product in between was released');
  inputs.forEach((c, i) => {
    t.same(after[i]!.shape, before[i]!.shape, `${c.name}: the same shape`);
    const worst = before[i]!.values.reduce((m, v, k) => Math.max(m, Math.abs(v - after[i]!.values[k]!)), 0);
    t.ok(worst < 1e-4, `${c.name}: the same values to float rounding (largest difference ${worst.toExponential(1)})`);
  });
  for (const c of inputs) {
    c.x.dispose();
    c.y.dispose();
  }
});
