import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { HAMMING_WASM_BASE64, hammingKernel } from '../../../actors/mail-query/hamming-kernel.ts';

const source = fileURLToPath(new URL('../../../actors/mail-query/hamming.wat', import.meta.url));

t.test('the bytes carried are what hamming.wat compiles to (.ci/run installs wabt)', async (t) => {
  const compiled = execFileSync('wat2wasm', [source, '--output=-']);
  t.equal(compiled.toString('base64'), HAMMING_WASM_BASE64, 'regenerate: wat2wasm actors/mail-query/hamming.wat -o - | base64 -w0');
});

t.test('the scan: each in-scope row’s distance and their histogram; rows out of scope left as they are', async (t) => {
  const kernel = hammingKernel();
  const rowBytes = 16;
  const rows = [
    [0x0000_0000, 0, 0, 0],
    [0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff],
    [0x0000_0001, 0x8000_0000, 0, 0x0000_0100],
    [0x0000_00ff, 0, 0, 0],
  ];
  const query = [0x0000_0001, 0, 0, 0];
  const memory = new Uint32Array(kernel.memory.buffer);
  for (const [r, words] of rows.entries()) memory.set(words, (r * rowBytes) / 4);
  const queryAt = rows.length * rowBytes;
  memory.set(query, queryAt / 4);
  const histogramAt = queryAt + rowBytes;
  const distancesAt = histogramAt + 129 * 4;
  const distances = new Uint16Array(kernel.memory.buffer, distancesAt, rows.length);
  distances.set([0, 0, 0xffff, 0]);
  kernel.distances(0, rows.length, rowBytes, queryAt, distancesAt, histogramAt);
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
  kernel.distances(0, 0, rowBytes, queryAt, distancesAt, histogramAt);
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

t.test('signed dots: per listed row, the table entries its signature bytes pick, summed', async (t) => {
  const kernel = hammingKernel();
  const rowBytes = 8;
  const bytes = new Uint8Array(kernel.memory.buffer);
  bytes.set([1, 0, 0, 0, 0, 0, 0, 0], 0); // row 0
  bytes.set([0, 255, 0, 0, 0, 0, 0, 2], 8); // row 1
  const rowsAt = 64;
  new Uint32Array(kernel.memory.buffer, rowsAt, 2).set([1, 0]);
  const tablesAt = 128;
  const tables = new Float64Array(kernel.memory.buffer, tablesAt, rowBytes * 256);
  // Byte position p, value v: p * 1000 + v.
  for (let p = 0; p < rowBytes; p++) for (let v = 0; v < 256; v++) tables[p * 256 + v] = p * 1000 + v;
  const outAt = tablesAt + rowBytes * 256 * 8;
  kernel.signedDots(0, rowsAt, 2, rowBytes, tablesAt, outAt);
  const sum = (row: number[]) => row.reduce((s, v, p) => s + p * 1000 + v, 0);
  t.same([...new Float64Array(kernel.memory.buffer, outAt, 2)], [sum([0, 255, 0, 0, 0, 0, 0, 2]), sum([1, 0, 0, 0, 0, 0, 0, 0])], 'in the order listed');
});
