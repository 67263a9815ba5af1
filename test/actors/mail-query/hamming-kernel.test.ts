import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { HAMMING_WASM_BASE64, hammingKernel } from '../../../actors/mail-query/hamming-kernel.ts';

const source = fileURLToPath(new URL('../../../actors/mail-query/hamming.wat', import.meta.url));

t.test('the bytes carried are what hamming.wat compiles to (.ci/run installs wabt)', async (t) => {
  const compiled = execFileSync('wat2wasm', [source, '--output=-']);
  t.equal(compiled.toString('base64'), HAMMING_WASM_BASE64, 'regenerate: wat2wasm actors/mail-query/hamming.wat -o - | base64 -w0');
});

t.test('the scan: each in-scope row’s distance over its sign bytes and their histogram; rows out of scope left as they are', async (t) => {
  const kernel = hammingKernel();
  const length = 16;
  // Each row: its sign words, then magnitude words the scan must not read.
  const stride = 2 * length;
  const rows = [
    [0x0000_0000, 0, 0, 0],
    [0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff],
    [0x0000_0001, 0x8000_0000, 0, 0x0000_0100],
    [0x0000_00ff, 0, 0, 0],
  ];
  const query = [0x0000_0001, 0, 0, 0];
  const memory = new Uint32Array(kernel.memory.buffer);
  for (const [r, words] of rows.entries()) {
    memory.set(words, (r * stride) / 4);
    memory.set([0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff], (r * stride + length) / 4);
  }
  const queryAt = rows.length * stride;
  memory.set(query, queryAt / 4);
  const histogramAt = queryAt + length;
  const distancesAt = histogramAt + 129 * 4;
  const distances = new Uint16Array(kernel.memory.buffer, distancesAt, rows.length);
  distances.set([0, 0, 0xffff, 0]);
  kernel.distances(0, rows.length, stride, length, queryAt, distancesAt, histogramAt);
  t.same([...distances], [1, 127, 0xffff, 7], 'bits differing from the query; the third row was out of scope');
  const histogram = new Uint32Array(kernel.memory.buffer, histogramAt, 129);
  t.same(
    [...histogram.entries()].filter(([, n]) => n > 0),
    [
      [1, 1],
      [7, 1],
      [127, 1],
    ],
  );
  kernel.distances(0, 0, stride, length, queryAt, distancesAt, histogramAt);
  t.equal(histogram[1], 1, 'no rows: nothing read or counted');
});

t.test('the selection: rows nearer than the cut, then the first ones at it, in order, at most as many as asked', async (t) => {
  const kernel = hammingKernel();
  const distancesAt = 0;
  const destAt = 64;
  new Uint16Array(kernel.memory.buffer, distancesAt, 8).set([5, 2, 0xffff, 3, 2, 3, 9, 3]);
  const picked = (cut: number, atCut: number, wide: number) => {
    const n = kernel.select(distancesAt, 8, cut, atCut, wide, destAt);
    return [...new Uint32Array(kernel.memory.buffer, destAt, n)];
  };
  t.same(picked(3, 2, 4), [1, 3, 4, 5], 'both rows at 2, the first two of the three at 3');
  t.same(picked(3, 2, 3), [1, 3, 4], 'no more than asked');
  t.same(picked(0, 0, 8), [], 'nothing under a cut of 0');
  t.same(picked(10, 0, 8), [0, 1, 3, 4, 5, 6, 7], 'a row out of scope (0xffff) is never taken');
});

t.test('two-bit dots: per listed row, by byte position, the sign table at its sign byte, plus and minus the sums at its magnitude bits', async (t) => {
  const kernel = hammingKernel();
  const length = 8;
  const stride = 2 * length;
  const bytes = new Uint8Array(kernel.memory.buffer);
  // Row 0: sign bytes, then magnitude bytes.
  bytes.set([1, 0, 0, 0, 0, 0, 0, 0], 0);
  bytes.set([3, 0, 0, 0, 0, 0, 0, 0], length);
  // Row 1.
  bytes.set([0, 255, 0, 0, 0, 0, 0, 2], stride);
  bytes.set([0, 15, 0, 0, 0, 0, 0, 0], stride + length);
  const listAt = 64;
  new Uint32Array(kernel.memory.buffer, listAt, 2).set([1, 0]);
  const signsAt = 128;
  const signs = new Float64Array(kernel.memory.buffer, signsAt, length * 256);
  const sumsAt = signsAt + length * 256 * 8;
  const sums = new Float64Array(kernel.memory.buffer, sumsAt, length * 256);
  // Position p, value v: p * 1000 + v in the sign tables, p + v / 1000 in the sums.
  for (let p = 0; p < length; p++) for (let v = 0; v < 256; v++) signs[p * 256 + v] = p * 1000 + v;
  for (let p = 0; p < length; p++) for (let v = 0; v < 256; v++) sums[p * 256 + v] = p + v / 1000;
  const outAt = sumsAt + length * 256 * 8;
  kernel.twoBitDots(0, listAt, 2, stride, length, signsAt, sumsAt, outAt);
  const score = (s: number[], m: number[]) => s.reduce((sum, v, p) => sum + p * 1000 + v + (p + (m[p]! & ~v & 255) / 1000) - (p + (m[p]! & v) / 1000), 0);
  const scores = [...new Float64Array(kernel.memory.buffer, outAt, 2)];
  const expected = [score([0, 255, 0, 0, 0, 0, 0, 2], [0, 15, 0, 0, 0, 0, 0, 0]), score([1, 0, 0, 0, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0, 0, 0])];
  t.ok(
    scores.every((s, i) => Math.abs(s - expected[i]!) < 1e-9),
    `in the order listed: ${scores} against ${expected}`,
  );
});
