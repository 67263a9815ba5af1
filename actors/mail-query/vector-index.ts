/**
 * The vector half of hybrid search, fast at mailbox scale (issue 15): a
 * binary-quantised candidate index of the serving generation, held in memory
 * by each query-pool thread, with exact rescoring in SQL.
 *
 * - `SignatureIndex` (pure, no I/O): per passage vector row, two bits a
 *   component packed into 64-bit words in a WebAssembly memory, the sign
 *   bits then whether each component is large for its row (384 dimensions
 *   → 96 bytes), with its passage, binding and received time in typed
 *   arrays and a chain of each message's rows. A query scans every row (or
 *   only the rows of the messages given): rows outside the bindings or the
 *   received range are marked out, the others get the Hamming distance of
 *   their signs to the query's (XOR + popcount in hamming.wat); the
 *   nearest form a pool (a histogram of the distances finds the cut, no
 *   heap), narrowed to the `count` candidates by the query's own
 *   components against each row's two bits.
 * - `nearestMessagesFast`: the candidates' vectors are read back by
 *   (passage, generation) and ranked exactly in SQL, by message
 *   (`nearestOfPassages`), so distances, ties and scope are those of
 *   `nearestMessages`; a candidate whose vector is gone (tombstone, erasure,
 *   re-derivation since loading) does not come back and is dropped from the
 *   index (`passageDistances` says which). Small scopes, an
 *   index not loaded yet, or too few messages among the candidates go to
 *   the exact `nearestMessages`, which stays the reference.
 * - Keeping current: the first load reads the generation in the table's
 *   order (front to back, in pages) up to the write sequence number it saw
 *   first (migration 0009); from there rows are read in write order (seq,
 *   primary key) after a cursor: only what was written since, one index
 *   probe when nothing was. A rewritten passage replaces its row; a
 *   deleted one is found by the rescoring, or by a count of the rows in the
 *   background at most every 10 minutes. A thread loads a generation in the
 *   background, in slices between the messages it answers, and answers
 *   exactly meanwhile; a new serving generation, or an index more than a
 *   quarter stale, starts a new index.
 *
 * Recall is measured, not assumed: bench/hybrid-search.ts reports recall@10
 * and @50 against the exact path (docs/semantic-search.md, Hybrid search).
 *
 * State: one index per (connection, generation), in the pool thread's
 * memory. Imported by `search.ts` (and the bench and tests).
 */
import type { Database } from '../../runtime/store/open.ts';
import { hammingKernel } from './hamming-kernel.ts';
import {
  countVectors,
  generation as generationOf,
  lastVectorSeq,
  type NearestMessage,
  type NearestQuery,
  nearestMessages,
  nearestOfPassages,
  passageDistances,
  VECTOR_CURSOR_START,
  VECTOR_KEY_START,
  type VectorCursor,
  type VectorKey,
  vectorBytes,
  vectorsInKeyOrder,
  vectorsWrittenAfter,
} from '../../runtime/store/mailbox/vectors.ts';

/**
 * Candidates per message asked (passages, rescored exactly in SQL): 500
 * for the 50 of a hybrid search. Each costs about 2 µs in SQL where the
 * store's file is mapped, and about 4 µs past the 2 GiB the query pool maps
 * (`MMAP_BYTES`: at 50,000 messages the raw MIME puts the vectors there), so
 * the rescoring was most of the vector half (stops 49 and 50). They are the
 * best of a pool eight times larger by sign bits (`POOL_PER_CANDIDATE`),
 * ranked by the query's components against each row's two bits a
 * component. bench/hybrid-search.ts at 255,483 passages (HS50,
 * docs/semantic-search.md): recall@50 0.999 on clustered vectors, 0.856 on
 * random ones (4,000 narrowed to 1,000 by signs alone, stop 49: 0.998 and
 * 0.828); 1.000 on the retrieval set's real embeddings (9,253, in memory).
 */
export const CANDIDATES_PER_RESULT = 10;
/** Rows taken by Hamming distance per candidate kept (`SignatureIndex.candidates`' pool). */
export const POOL_PER_CANDIDATE = 8;
/**
 * The exact scan answers a scope of at most this many rows, plus one for
 * every `SCAN_ROWS_PER_EXACT_ROW` rows of the index (`exactScopeRows`). The
 * exact scan costs about 2 µs a row in scope; the index path the scan of
 * every signature (proportional to the index's rows: 2.7–6.6 ms at 255,483)
 * and the rescoring of 500 candidates (about 3 ms). At 255,483 rows (HS52,
 * bench/hybrid-search.ts) a 1 % folder (2,500 rows) took 5.2–6.1 ms exact
 * against 5.8–9.2 through the index, a 2 % received range (about 5,100
 * rows) 7.8–9.3 against 7.5–9.9, recall@50 1.000 both ways: the two meet
 * at about 4,300 rows there, and at about 2,300 on the 50,000 rows of a
 * 10,000-message mailbox, where a date range of a tenth of the mail (about
 * 5,000 rows) went from 24–26 to 17–19 ms through /mcp (stop 52). A fixed
 * 10,000, from before the scan and the narrowing were made fast (stop 49),
 * kept such scopes on the slower path.
 */
export const EXACT_SCOPE_ROWS = 1_750;
/** Rows of the index whose scan costs about what one row of the exact scan does. */
const SCAN_ROWS_PER_EXACT_ROW = 100;
/** Rows read per slice of a background load: 2,000 took 25–40 ms (the whole 255,000: 3–5 s, loaded machine), so a message waits at most that behind one. */
const LOAD_SLICE_ROWS = 2_000;
/** At most this many rows written since are read inside a search; more are left to the background load. */
const DELTA_ROWS = 2_000;
/** Rows found gone past this share of the index: load it again (their memory is kept until then). */
const STALE_SHARE = 0.25;
/**
 * Rows deleted that are never a candidate are never found gone: this often
 * (at most), after a search, the generation's rows are counted in the
 * background, and an index holding more than a quarter more is loaded again.
 */
const COUNT_EVERY_MS = 10 * 60_000;

/**
 * The sign bits of float32 components, as stored (little-endian bytes): bit
 * i of the signature is the sign bit of component i, the top bit of its
 * fourth byte. No Float32Array view, so the bytes need no alignment.
 */
export function signatureOf(bytes: Uint8Array, dimensions: number, into: Uint32Array, at = 0): void {
  const words = wordsFor(dimensions);
  for (let w = 0; w < words; w++) into[at + w] = 0;
  for (let i = 0; i < dimensions; i++) if (bytes[4 * i + 3]! & 0x80) into[at + (i >>> 5)]! |= 1 << (i & 31);
}

/**
 * A magnitude bit is set where |x| exceeds this many times the row's root
 * mean square component: with the sign, two bits a component, the optimal
 * four-level quantiser of a normal distribution (Lloyd–Max: cuts at 0 and
 * ±0.98σ, levels about ±0.45σ and ±1.5σ, taken here as ±1 and ±3).
 */
const MAGNITUDE_CUT = 0.98;

/**
 * A row's two bit planes from its float32 components as stored
 * (little-endian bytes): the sign bits at word `at` (`signatureOf`), then,
 * `wordsFor(dimensions)` words on, its magnitude bits (`MAGNITUDE_CUT`).
 * `floats` is scratch of at least `dimensions` (the bytes need no alignment).
 */
function codesOf(bytes: Uint8Array, dimensions: number, into: Uint32Array, at: number, floats: Float32Array): void {
  const words = wordsFor(dimensions);
  signatureOf(bytes, dimensions, into, at);
  new Uint8Array(floats.buffer, floats.byteOffset, dimensions * 4).set(bytes);
  let squares = 0;
  for (let i = 0; i < dimensions; i++) squares += floats[i]! * floats[i]!;
  const cut = MAGNITUDE_CUT * Math.sqrt(squares / dimensions);
  const magnitudes = at + words;
  for (let w = 0; w < words; w++) into[magnitudes + w] = 0;
  for (let i = 0; i < dimensions; i++) if (Math.abs(floats[i]!) > cut) into[magnitudes + (i >>> 5)]! |= 1 << (i & 31);
}

/**
 * The query's tables for the kernel's `twoBitDots`, by byte position p of
 * a plane (components 8p to 8p + 7; past the vector's length, 0) and byte
 * value v: `signs`, the eight components summed with the signs v's bits
 * give them (bit set: negative); `sums`, twice the components of v's set
 * bits. A row's score, Σ q_i · sign_i · (1 + 2 · magnitude_i), is then three
 * lookups a byte: signs[p][s] + sums[p][m & ~s] − sums[p][m & s].
 */
function queryTables(query: Float32Array, words: number, signs: Float64Array, sums: Float64Array): void {
  const bytes = words * 4;
  for (let b = 0; b < bytes; b++) {
    const base = b * 256;
    let plus = 0;
    for (let j = 0; j < 8; j++) plus += query[8 * b + j] ?? 0;
    signs[base] = plus;
    sums[base] = 0;
    // Each pattern from the one without its lowest set bit: that component's sign turned, or added.
    for (let v = 1; v < 256; v++) {
      const low = v & -v;
      const component = query[8 * b + 31 - Math.clz32(low)] ?? 0;
      signs[base + v] = signs[base + (v ^ low)]! - 2 * component;
      sums[base + v] = sums[base + (v ^ low)]! + 2 * component;
    }
  }
}

/** 32-bit words of a signature, rounded up to an even count (the scan reads 64 bits at a time; padding is 0 on both sides). */
export const wordsFor = (dimensions: number): number => Math.ceil(dimensions / 64) * 2;

/**
 * Which rows a query may find: of these bindings, received in [from,
 * below), and, with `messages` (message ids), of those messages only.
 */
export type IndexScope = { bindingIds: readonly number[]; from: number; below: number; messages?: readonly number[] };

/** A signature index of one generation's passage vectors (pure: rows in, candidates out). */
export class SignatureIndex {
  readonly dimensions: number;
  readonly words: number;
  /** Bytes of a row's codes: two planes of `words` words. */
  private readonly stride: number;
  /** Scratch for a row's components as floats. */
  private readonly floats: Float32Array;
  rows = 0;

  /**
   * The scan, and the memory the rows' codes live in (from byte 0, `stride` bytes a row: the sign bits, then the
   * magnitude bits); a query's scratch follows them.
   */
  private readonly kernel = hammingKernel();
  /** A view of the kernel's memory, made again whenever it grows. */
  private signatures: Uint32Array;
  private passages: Int32Array;
  /** 0 for a dropped row: no binding id is 0 (ids start at 1). */
  private bindings: Int32Array;
  private received: Float64Array;
  /** Row of each passage id (+1; 0: none). */
  private rowOfPassage = new Int32Array(1024);
  /**
   * Each message's rows as a chain, so that a scope of some messages (a
   * sender's mail) visits their rows only, not every row: the last row
   * added for a message id (+1; 0: none), and per row the one added before
   * it for the same message (+1; 0: none). A dropped row stays in its chain,
   * out of every scope by its binding (0).
   */
  private lastRowOfMessage = new Int32Array(1024);
  private previousRowOfMessage: Int32Array;
  /** Live rows per binding. */
  private perBinding = new Map<number, number>();
  /** The rows dropped (found gone, or replaced by a rewrite): their slots stay until a reload. */
  private readonly droppedRows: number[] = [];

  constructor(dimensions: number, capacity = 1024) {
    this.dimensions = dimensions;
    this.words = wordsFor(dimensions);
    this.stride = this.words * 8;
    this.floats = new Float32Array(dimensions);
    this.signatures = this.signatureView(capacity);
    this.passages = new Int32Array(capacity);
    this.bindings = new Int32Array(capacity);
    this.received = new Float64Array(capacity);
    this.previousRowOfMessage = new Int32Array(capacity);
  }

  /** Rows dropped. */
  get dead(): number {
    return this.droppedRows.length;
  }

  /** Live rows. */
  get live(): number {
    return this.rows - this.dead;
  }

  /** Bytes held (typed arrays), for the figures. */
  get bytes(): number {
    const arrays = [this.passages, this.bindings, this.received, this.rowOfPassage, this.lastRowOfMessage, this.previousRowOfMessage];
    return this.kernel.memory.buffer.byteLength + arrays.reduce((sum, a) => sum + a.byteLength, 0);
  }

  /** Adds a passage's row; a passage already held is replaced (its vector was rewritten). */
  add(row: { passageId: number; messageId: number; bindingId: number; received: number; vector: Uint8Array }): void {
    if (row.vector.byteLength !== this.dimensions * 4) throw new RangeError('a vector of another length than its generation');
    this.drop(row.passageId);
    if (this.rows === this.passages.length) this.grow(this.rows * 2);
    const r = this.rows++;
    codesOf(row.vector, this.dimensions, this.signatures, (r * this.stride) / 4, this.floats);
    this.passages[r] = row.passageId;
    this.bindings[r] = row.bindingId;
    this.perBinding.set(row.bindingId, (this.perBinding.get(row.bindingId) ?? 0) + 1);
    this.received[r] = row.received;
    if (row.passageId >= this.rowOfPassage.length) this.rowOfPassage = widened(this.rowOfPassage, row.passageId + 1);
    this.rowOfPassage[row.passageId] = r + 1;
    if (row.messageId >= this.lastRowOfMessage.length) this.lastRowOfMessage = widened(this.lastRowOfMessage, row.messageId + 1);
    this.previousRowOfMessage[r] = this.lastRowOfMessage[row.messageId]!;
    this.lastRowOfMessage[row.messageId] = r + 1;
  }

  /** Forgets a passage's row (its vector is gone). */
  drop(passageId: number): void {
    const r = (this.rowOfPassage[passageId] ?? 0) - 1;
    if (r < 0) return;
    this.rowOfPassage[passageId] = 0;
    this.perBinding.set(this.bindings[r]!, this.perBinding.get(this.bindings[r]!)! - 1);
    this.bindings[r] = 0;
    this.droppedRows.push(r);
  }

  /** Whether every binding with live rows is wanted (1 at its id). */
  private everyBindingIn(wanted: Uint8Array): boolean {
    for (const [id, n] of this.perBinding) if (n > 0 && wanted[id] !== 1) return false;
    return true;
  }

  /** Rows of these bindings (a bound on a scope: the received range is not counted). */
  rowsIn(bindingIds: readonly number[]): number {
    let n = 0;
    for (const id of new Set(bindingIds)) n += this.perBinding.get(id) ?? 0;
    return n;
  }

  /**
   * The passages of the `count` rows in scope nearest the query, and how
   * many rows the scope holds. The `pool` rows whose signatures are nearest
   * by Hamming distance (ties at the cut: the earlier rows) are ranked again
   * by the query's own components against each row's two bits (`bestByTwoBits`),
   * and the `count` best of them kept (ties: the earlier rows). `pool` equal
   * to `count` keeps the Hamming order alone.
   */
  candidates(query: Float32Array, scope: IndexScope, count: number, pool = count): { passageIds: number[]; inScope: number } {
    const { words, rows, bindings, received } = this;
    const wide = Math.max(count, pool);
    const scratch = this.scratch(rows, wide);
    signatureOf(vectorBytes(query), this.dimensions, scratch.memory, scratch.query / 4);
    let top = 0;
    for (const id of scope.bindingIds) top = Math.max(top, id);
    const wanted = new Uint8Array(top + 1);
    for (const id of scope.bindingIds) if (id > 0) wanted[id] = 1;
    const { distances, histogram } = scratch;
    const OUT = 0xffff;
    const { from, below } = scope;
    const only = scope.messages;
    let inScope = 0;
    const inRange = (r: number): boolean => {
      const binding = bindings[r]!;
      const at = received[r]!;
      return binding <= top && wanted[binding] === 1 && at >= from && at < below;
    };
    if (only !== undefined) {
      // Some messages (a filter's mail): their rows alone, by their chains.
      distances.fill(OUT);
      const { lastRowOfMessage, previousRowOfMessage } = this;
      for (const id of only) {
        for (let r = (lastRowOfMessage[id] ?? 0) - 1; r >= 0; r = previousRowOfMessage[r]! - 1) {
          // A message listed twice counts its rows once.
          if (distances[r] === OUT && inRange(r)) {
            distances[r] = 0;
            inScope++;
          }
        }
      }
    } else if (from < 0 && below === Number.MAX_SAFE_INTEGER && this.everyBindingIn(wanted)) {
      // The whole index (a search of every folder, no dates): only the rows dropped are out.
      distances.fill(0);
      for (const r of this.droppedRows) distances[r] = OUT;
      inScope = this.live;
    } else {
      for (let r = 0; r < rows; r++) {
        if (inRange(r)) {
          distances[r] = 0;
          inScope++;
        } else distances[r] = OUT;
      }
    }
    this.kernel.distances(0, rows, this.stride, words * 4, scratch.query, distances.byteOffset, histogram.byteOffset);
    // The cut: the smallest distance below which, with its ties, `wide` rows lie.
    let cut = 0;
    for (let seen = 0; cut < histogram.length; cut++) {
      seen += histogram[cut]!;
      if (seen >= wide) break;
    }
    let atCut = wide;
    for (let d = 0; d < cut; d++) atCut -= histogram[d]!;
    const selected = this.kernel.select(distances.byteOffset, rows, cut, atCut, wide, scratch.selected);
    const kept =
      selected <= count
        ? new Uint32Array(this.kernel.memory.buffer, scratch.selected, selected)
        : this.bestByTwoBits(query, scratch.selected, selected, count, scratch);
    return { passageIds: Array.from(kept, (r) => this.passages[r]!), inScope };
  }

  /**
   * The `count` of the `n` selected rows (in row order, from byte `at`)
   * nearest the query by their two bits a component: the query's dot
   * product with the row quantised to ±1 and ±3 (sign, and whether the
   * component is large for its row), where the Hamming distance counts
   * every disagreeing sign alike. Rows are compared by direction (a cosine
   * generation's order; an L2 generation's is decided by the exact
   * rescoring). In row order; ties: the earlier rows.
   */
  private bestByTwoBits(query: Float32Array, at: number, n: number, count: number, scratch: Scratch): number[] {
    const { memory } = this.kernel;
    const tableLength = this.words * 4 * 256;
    queryTables(
      query,
      this.words,
      new Float64Array(memory.buffer, scratch.tables, tableLength),
      new Float64Array(memory.buffer, scratch.tables + tableLength * 8, tableLength),
    );
    this.kernel.twoBitDots(0, at, n, this.stride, this.words * 4, scratch.tables, scratch.tables + tableLength * 8, scratch.scores);
    const rows = new Uint32Array(memory.buffer, at, n);
    const scores = new Float64Array(memory.buffer, scratch.scores, n);
    // The count-th largest score, then every row above it and the earliest at it.
    const threshold = Float64Array.from(scores).sort()[n - count]!;
    let atThreshold = count;
    for (const score of scores) if (score > threshold) atThreshold--;
    const kept: number[] = [];
    for (let i = 0; i < n; i++) {
      if (scores[i]! > threshold) kept.push(rows[i]!);
      else if (scores[i] === threshold && atThreshold > 0) {
        kept.push(rows[i]!);
        atThreshold--;
      }
    }
    return kept;
  }

  private grow(capacity: number): void {
    const grow = <T extends Int32Array | Float64Array>(old: T, size: number): T => {
      const next = new (old.constructor as new (n: number) => T)(size);
      next.set(old);
      return next;
    };
    // The signatures stay where they are (from byte 0): a larger memory only makes room after them.
    this.signatures = this.signatureView(capacity);
    this.passages = grow(this.passages, capacity);
    this.bindings = grow(this.bindings, capacity);
    this.received = grow(this.received, capacity);
    this.previousRowOfMessage = grow(this.previousRowOfMessage, capacity);
  }

  /** The kernel's memory grown to at least `bytes`; a grown memory detaches every view of it. */
  private reserve(bytes: number): ArrayBuffer {
    const { memory } = this.kernel;
    const short = bytes - memory.buffer.byteLength;
    if (short > 0) memory.grow(Math.ceil(short / WASM_PAGE));
    return memory.buffer;
  }

  /** The codes of `capacity` rows, as a view from byte 0. */
  private signatureView(capacity: number): Uint32Array {
    return new Uint32Array(this.reserve(capacity * this.stride), 0, (capacity * this.stride) / 4);
  }

  /**
   * A query's scratch after the codes of the rows held: the query's
   * signature, the histogram of distances (cleared), a distance per row,
   * room for `wide` selected rows, the query's two sets of tables and the
   * selected rows' scores; the codes' view made again if the memory grew for it.
   */
  private scratch(rows: number, wide: number): Scratch {
    const query = align8(this.passages.length * this.stride);
    const histogramAt = align8(query + this.words * 4);
    const histogramLength = this.dimensions + 2;
    const distancesAt = align8(histogramAt + histogramLength * 4);
    const selected = align8(distancesAt + rows * 2);
    const tables = align8(selected + wide * 4);
    const scores = tables + 2 * this.words * 4 * 256 * 8;
    const before = this.kernel.memory.buffer;
    const buffer = this.reserve(scores + wide * 8);
    if (buffer !== before) this.signatures = new Uint32Array(buffer, 0, (this.passages.length * this.stride) / 4);
    return {
      memory: new Uint32Array(buffer),
      query,
      histogram: new Uint32Array(buffer, histogramAt, histogramLength).fill(0),
      distances: new Uint16Array(buffer, distancesAt, rows),
      selected,
      tables,
      scores,
    };
  }
}

/** Where a query's scratch lies in the kernel's memory (byte offsets, and views of it). */
type Scratch = { memory: Uint32Array; query: number; histogram: Uint32Array; distances: Uint16Array; selected: number; tables: number; scores: number };

/** A copy of `array` with room for at least `length` entries (doubling), the rest 0. */
function widened(array: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(Math.max(length, array.length * 2));
  grown.set(array);
  return grown;
}

const WASM_PAGE = 65_536;
const align8 = (n: number): number => Math.ceil(n / 8) * 8;

/** A pool thread's index of one generation, and how far it has read. */
type Held = {
  generation: number;
  index: SignatureIndex;
  /** The first load, in key order: where it stands, and the seq it reads up to (read with its first page). */
  scan: { after: VectorKey; upTo: number | null } | null;
  /** After the first load: the last row read in write order. */
  cursor: VectorCursor;
  complete: boolean;
  loading: boolean;
  /** When the generation's rows were last counted (epoch ms). */
  countedAt: number;
};

const held = new WeakMap<Database, Held>();

/** How a background slice is run: after the current message (tests and the bench load synchronously with `loadIndex`). */
let schedule: (slice: () => void) => void = (slice) => setImmediate(slice);

let sliceRows = LOAD_SLICE_ROWS;

/** For tests: run background slices another way (or not at all), of so many rows. */
export function scheduleSlicesWith(run: (slice: () => void) => void, rows = LOAD_SLICE_ROWS): void {
  schedule = run;
  sliceRows = rows;
}

function heldFor(db: Database, generationId: number, dimensions: number): Held {
  let h = held.get(db);
  if (h === undefined || h.generation !== generationId || h.index.dead > STALE_SHARE * Math.max(1, h.index.rows)) {
    h = {
      generation: generationId,
      index: new SignatureIndex(dimensions),
      scan: { after: VECTOR_KEY_START, upTo: null },
      cursor: VECTOR_CURSOR_START,
      complete: false,
      loading: false,
      countedAt: Date.now(),
    };
    held.set(db, h);
  }
  return h;
}

/** Reads up to `limit` rows after the cursor into the index; true when none remain. */
function readOn(db: Database, h: Held, limit: number): boolean {
  if (h.scan !== null) {
    // Every row of seq ≤ upTo was committed before this page's snapshot: the key pass sees it (or it was deleted since).
    h.scan.upTo ??= lastVectorSeq(db, h.generation);
    const rows = vectorsInKeyOrder(db, h.generation, h.scan.after, limit);
    for (const row of rows) h.index.add(row);
    const last = rows.at(-1);
    if (last !== undefined) h.scan.after = { bindingId: last.bindingId, received: last.received, messageId: last.messageId, passageId: last.passageId };
    if (rows.length === limit) return false;
    // Then in write order, from after the last seq the key pass covered.
    h.cursor = { seq: h.scan.upTo, bindingId: Number.MAX_SAFE_INTEGER, received: Number.MAX_SAFE_INTEGER, messageId: Number.MAX_SAFE_INTEGER, passageId: 0 };
    h.scan = null;
  }
  const rows = vectorsWrittenAfter(db, h.generation, h.cursor, limit);
  for (const row of rows) h.index.add(row);
  const last = rows.at(-1);
  if (last !== undefined)
    h.cursor = { seq: last.seq, bindingId: last.bindingId, received: last.received, messageId: last.messageId, passageId: last.passageId };
  return rows.length < limit;
}

/** Loads (or brings up to date) the generation's index now, in one read transaction; answers it (the bench, tests). */
export function loadIndex(db: Database, generationId: number): SignatureIndex | undefined {
  const target = generationOf(db, generationId);
  if (target === undefined) return undefined;
  const h = heldFor(db, generationId, target.dimensions);
  db.transaction(() => {
    while (!readOn(db, h, LOAD_SLICE_ROWS * 4));
  }).deferred();
  h.complete = true;
  return h.index;
}

/** The thread's index of the generation, if loaded (tests, the bench). */
export function heldIndex(db: Database, generationId: number): SignatureIndex | undefined {
  const h = held.get(db);
  return h?.generation === generationId ? h.index : undefined;
}

/** Forgets the thread's index (the bench's cold load). */
export function dropIndex(db: Database): void {
  held.delete(db);
}

/** Counts the generation's rows after this message; an index more than a quarter stale is dropped (the next search starts a new one). */
function countInBackground(db: Database, h: Held): void {
  h.countedAt = Date.now();
  schedule(() => {
    if (held.get(db) !== h || !db.open) return;
    try {
      const rows = db
        .transaction(() => {
          readOn(db, h, DELTA_ROWS);
          return countVectors(db, h.generation);
        })
        .deferred();
      if (h.index.live - rows > STALE_SHARE * h.index.live) held.delete(db);
    } catch {
      held.delete(db);
    }
  });
}

function loadInBackground(db: Database, h: Held): void {
  if (h.loading) return;
  h.loading = true;
  const slice = () => {
    if (held.get(db) !== h || !db.open) return;
    try {
      const done = db.transaction(() => readOn(db, h, sliceRows)).deferred();
      if (done) {
        h.complete = true;
        h.loading = false;
      } else schedule(slice);
    } catch {
      // The connection closed or the store refused a read: the next search starts again.
      held.delete(db);
    }
  };
  schedule(slice);
}

/**
 * `nearestMessages`, through the index when it is loaded and the scope is
 * large; exact otherwise. Runs inside the caller's read transaction.
 */
export function nearestMessagesFast(db: Database, query: NearestQuery, tuning: Tuning = {}): NearestMessage[] {
  const target = generationOf(db, query.generation);
  if (target === undefined || query.bindingIds.length === 0 || query.limit < 1) return [];
  const h = readyIndex(db, target.id, target.dimensions);
  if (h === null || h.index.rowsIn(query.bindingIds) <= exactScopeRows(h.index, tuning)) return nearestMessages(db, query);
  return fromIndex(db, h, query, undefined, tuning) ?? nearestMessages(db, query);
}

/**
 * The nearest of `messageIds` (a filter's mail: a sender's, say) through
 * the index, as `nearestMessagesFast` ranks a scope; null when the index is
 * not loaded or holds too few of them among the candidates, for the caller's
 * exact ranking of those messages. Every row of theirs is a candidate when
 * they have at most `count` rows: then the answer is exact.
 */
export function nearestMessagesAmong(db: Database, query: NearestQuery, messageIds: readonly number[], tuning: Tuning = {}): NearestMessage[] | null {
  const target = generationOf(db, query.generation);
  if (target === undefined || query.bindingIds.length === 0 || query.limit < 1 || messageIds.length === 0) return [];
  const h = readyIndex(db, target.id, target.dimensions);
  if (h === null) return null;
  return fromIndex(db, h, query, messageIds, { ...tuning, exactScopeRows: 0 });
}

/** Rows in scope at or below which the exact scan answers: the tuning's, else as `EXACT_SCOPE_ROWS` says. */
function exactScopeRows(index: SignatureIndex, tuning: Tuning): number {
  return tuning.exactScopeRows ?? EXACT_SCOPE_ROWS + Math.floor(index.rows / SCAN_ROWS_PER_EXACT_ROW);
}

/** The bench's and the tests' knobs; the defaults are the constants above. */
type Tuning = { candidatesPerResult?: number; poolPerCandidate?: number; exactScopeRows?: number; countEveryMs?: number };

/** The thread's index of the generation brought up to this snapshot, or null while it loads (in the background). */
function readyIndex(db: Database, generationId: number, dimensions: number): Held | null {
  const h = heldFor(db, generationId, dimensions);
  if (!h.complete) {
    loadInBackground(db, h);
    return null;
  }
  // What was written since the last search, in this snapshot; a burst larger than that is left to the background.
  if (!readOn(db, h, DELTA_ROWS)) {
    h.complete = false;
    loadInBackground(db, h);
    return null;
  }
  return h;
}

/** The index's candidates in scope, rescored exactly, by message; null where the exact answer is due instead. */
function fromIndex(db: Database, h: Held, query: NearestQuery, only: readonly number[] | undefined, tuning: Tuning): NearestMessage[] | null {
  const exactBelow = exactScopeRows(h.index, tuning);
  const from = query.receivedFrom === undefined ? -1 : Math.max(0, query.receivedFrom);
  const below = query.receivedBelow === undefined ? Number.MAX_SAFE_INTEGER : Math.max(0, query.receivedBelow);
  const count = query.limit * (tuning.candidatesPerResult ?? CANDIDATES_PER_RESULT);
  const scope: IndexScope = { bindingIds: query.bindingIds, from, below, ...(only === undefined ? {} : { messages: only }) };
  const { passageIds, inScope } = h.index.candidates(query.queryVector, scope, count, count * (tuning.poolPerCandidate ?? POOL_PER_CANDIDATE));
  if (inScope <= exactBelow) return null;
  const { messages, found } = nearestOfPassages(db, query, passageIds);
  if (found < passageIds.length) {
    // Some vectors are gone (or left the scope): which ones, so that they are no candidates again.
    const back = new Set(passageDistances(db, query, passageIds).map((s) => s.passageId));
    for (const id of passageIds) if (!back.has(id)) h.index.drop(id);
  }
  if (Date.now() - h.countedAt > (tuning.countEveryMs ?? COUNT_EVERY_MS)) countInBackground(db, h);
  // Fewer messages among the candidates than asked while the scope holds more: the exact answer.
  if (messages.length < query.limit && inScope > passageIds.length) return null;
  return messages;
}
