/**
 * The sign-bit index's scan in WebAssembly (hamming.wat beside this file):
 * each row's XOR with the query by 64-bit words and their population count
 * (i64.popcnt, one processor instruction where it has one), 0.47 ms for
 * 255,483 rows of 384 bits against 5.9 ms for the best JavaScript form
 * (three words per nibble count); then the rows under the cut, and their
 * dot products with the query by sign. The
 * module is small enough to carry as bytes; a test compiles hamming.wat
 * again and checks they are its own.
 *
 * Regenerate after editing hamming.wat:
 *   wat2wasm actors/mail-query/hamming.wat -o - | base64 -w0
 *
 * Importable by actors/mail-query/vector-index.ts (and its tests).
 */

export const HAMMING_WASM_BASE64 =
  'AGFzbQEAAAABFAJgBn9/f39/fwBgBn9/f39/fwF/AwQDAAEABQMBAAEHLAQGbWVtb3J5AgAJZGlzdGFuY2VzAAAGc2VsZWN0AAEKc2lnbmVkRG90cwACCu4CA4MBAQN/IAFFBEAPCwNAIAQvAQBB//8DRwRAQQAhB0EAIQYDQCAHIAAgBmopAwAgAyAGaikDAIV7p2ohByAGQQhqIQYgBiACSQ0ACyAEIAc7AQAgBSAHQQJ0aiEIIAggCCgCAEEBajYCAAsgACACaiEAIARBAmohBCABQQFrIQEgAQ0ACwtnAQN/AkADQCAGIAFPDQEgByAETw0BIAAgBkEBdGovAQAhCCAIIAJJIAggAkYgA0EASnFyBEAgCCACRgRAIANBAWshAwsgBSAHQQJ0aiAGNgIAIAdBAWohBwsgBkEBaiEGDAALCyAHC38CA38BfCACRQRADwsDQCAAIAEoAgAgA2xqIQZEAAAAAAAAAAAhCUEAIQcgBCEIA0AgCSAIIAYgB2otAABBA3RqKwMAoCEJIAhBgBBqIQggB0EBaiEHIAcgA0kNAAsgBSAJOQMAIAVBCGohBSABQQRqIQEgAkEBayECIAINAAsL';

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
   * For each of `rows` rows from byte `signatures` (`rowBytes` each, a multiple of 8) whose u16 at `out` is not
   * 0xffff: its Hamming distance to the signature at `query`, written there, and counted in the u32 histogram at
   * `histogram`.
   */
  distances(signatures: number, rows: number, rowBytes: number, query: number, out: number, histogram: number): void;
  /** The numbers of the rows nearer than \`cut\` and of the first \`atCut\` at it (in order, at most \`wide\`) from byte \`dest\`; how many. */
  select(out: number, rows: number, cut: number, atCut: number, wide: number, dest: number): number;
  /**
   * For each of \`n\` rows numbered (u32) from byte \`rowsAt\`: the sum over its signature's bytes of the f64 at \`tables\`
   * + 2048 per byte position + 8 per byte value, written as f64 from \`outAt\`.
   */
  signedDots(signatures: number, rowsAt: number, n: number, rowBytes: number, tables: number, outAt: number): void;
};

export function hammingKernel(): HammingKernel {
  const { exports } = new wasm.Instance(compiled, {});
  return exports as unknown as HammingKernel;
}
