/**
 * The sign-bit index's scan in WebAssembly (hamming.wat beside this file):
 * each row's XOR with the query by 64-bit words and their population count
 * (i64.popcnt, one processor instruction where it has one), 0.47 ms for
 * 255,483 rows of 384 bits against 5.9 ms for the best JavaScript form
 * (three words per nibble count); then the rows under the cut, and their
 * dot products with the query by two bits a component (sign, magnitude).
 * The module is small enough to carry as bytes; a test compiles hamming.wat
 * again and checks they are its own.
 *
 * Regenerate after editing hamming.wat:
 *   wat2wasm actors/mail-query/hamming.wat -o - | base64 -w0
 *
 * Importable by actors/mail-query/vector-index.ts (and its tests).
 */

export const HAMMING_WASM_BASE64 =
  'AGFzbQEAAAABIANgB39/f39/f38AYAZ/f39/f38Bf2AIf39/f39/f38AAwQDAAECBQMBAAEHLAQGbWVtb3J5AgAJZGlzdGFuY2VzAAAGc2VsZWN0AAEKdHdvQml0RG90cwACCqsDA4MBAQN/IAFFBEAPCwNAIAUvAQBB//8DRwRAQQAhCEEAIQcDQCAIIAAgB2opAwAgBCAHaikDAIV7p2ohCCAHQQhqIQcgByADSQ0ACyAFIAg7AQAgBiAIQQJ0aiEJIAkgCSgCAEEBajYCAAsgACACaiEAIAVBAmohBSABQQFrIQEgAQ0ACwtnAQN/AkADQCAGIAFPDQEgByAETw0BIAAgBkEBdGovAQAhCCAIIAJJIAggAkYgA0EASnFyBEAgCCACRgRAIANBAWshAwsgBSAHQQJ0aiAGNgIAIAdBAWohBwsgBkEBaiEGDAALCyAHC7sBAgV/AXwgAkUEQA8LA0AgACABKAIAIANsaiEIRAAAAAAAAAAAIQ1BACEJQQAhDANAIAggCWotAAAhCiAIIARqIAlqLQAAIQsgDSAFIAxqIApBA3RqKwMAIAYgDGogCyAKQf8Bc3FBA3RqKwMAoCAGIAxqIAsgCnFBA3RqKwMAoaAhDSAMQYAQaiEMIAlBAWohCSAJIARJDQALIAcgDTkDACAHQQhqIQcgAUEEaiEBIAJBAWshAiACDQALCw==';

/** What this module uses of the WebAssembly API (the project's TypeScript libraries do not declare it). */
type Wasm = {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
};
export type WasmMemory = { readonly buffer: ArrayBuffer; grow(pages: number): number };

const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;
const compiled = new wasm.Module(Buffer.from(HAMMING_WASM_BASE64, 'base64'));

/** One instance: its own linear memory (which the caller lays out and grows) and the scan. */
export type HammingKernel = {
  memory: WasmMemory;
  /**
   * For each of `rows` rows from byte `rowsAt` (`stride` bytes each; their first `length`, a multiple of 8, the sign
   * bits) whose u16 at `out` is not 0xffff: its Hamming distance to the `length` bytes at `query`, written there, and
   * counted in the u32 histogram at `histogram`.
   */
  distances(rowsAt: number, rows: number, stride: number, length: number, query: number, out: number, histogram: number): void;
  /** The numbers of the rows nearer than `cut` and of the first `atCut` at it (in order, at most `wide`) from byte `dest`; how many. */
  select(out: number, rows: number, cut: number, atCut: number, wide: number, dest: number): number;
  /**
   * For each of `n` rows numbered (u32) from byte `listAt`, by byte position p of its `length` sign bytes s and the
   * magnitude bytes m after them: `signs`[p][s] + `sums`[p][m & ~s] − `sums`[p][m & s] (f64 tables of 256 entries a
   * position), summed, written as f64 from `outAt`.
   */
  twoBitDots(rowsAt: number, listAt: number, n: number, stride: number, length: number, signs: number, sums: number, outAt: number): void;
};

export function hammingKernel(): HammingKernel {
  const { exports } = new wasm.Instance(compiled, {});
  return exports as unknown as HammingKernel;
}
