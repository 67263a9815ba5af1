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
