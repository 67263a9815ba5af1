/**
 * The in-memory candidate index of the vector half of hybrid search
 * (actors/mail-query/vector-index.ts, issue 15), on a real store: mail
 * written as the sync actor writes it, vectors written by `writeVectors`.
 *
 * Vectors: one topic per message on an axis of its own, the sign pattern
 * of the axis's block distinct (so sign bits tell topics apart), and a small
 * offset ordering messages of one topic. The index is forced for every
 * scope (`exactScopeRows: 0`) and asked for few candidates, so that what it
 * answers comes from its candidates, not from the exact fallback.
 *
 * What an agent notices: the vector list is the exact one; mail embedded
 * after the index was loaded is found; mail whose vectors were deleted never
 * comes back; a new serving generation is answered from its own vectors;
 * folders and the received range hold.
 */
import t from 'tap';
import {
  heldIndex,
  loadIndex,
  nearestMessagesAmong,
  nearestMessagesFast,
  scheduleSlicesWith,
  SignatureIndex,
} from '../../../actors/mail-query/vector-index.ts';
import {
  beginGeneration,
  deleteMessageVectors,
  nearestMessages,
  type NearestQuery,
  promoteGeneration,
  writeVectors,
} from '../../../runtime/store/mailbox/vectors.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { TestLike } from '../../runtime/store/fixtures/scratch.ts';
import { deliver, HOUR, idOf, T0, world, type World } from './fixtures.ts';

const DIMENSIONS = 96;
const TOPICS = 8;
const BLOCK = DIMENSIONS / TOPICS;
const FORCED = { exactScopeRows: 0, candidatesPerResult: 2 };

/** Topic `topic`: its block of components positive, every other negative; `offset` moves it off the axis a little. */
function vectorOf(topic: number, offset = 0): Float32Array<ArrayBuffer> {
  const v = new Float32Array(DIMENSIONS);
  for (let i = 0; i < DIMENSIONS; i++) v[i] = Math.floor(i / BLOCK) === topic ? 1 : -0.2;
  v[(topic * BLOCK + 1) % DIMENSIONS] = 1 - offset;
  return v;
}

type Stored = { world: World; generation: number; ids: number[] };

/** 24 messages in alice's inbox (topic uid % 8, offset by uid), 8 in her archive; every passage embedded. */
function stored(t: TestLike): Stored {
  const w = world(t);
  const mails = (n: number, first: number) =>
    Array.from({ length: n }, (_, i) => ({ uid: first + i, subject: `Note ${first + i}`, body: `Words of note ${first + i}.` }));
  deliver(w.db, 'alice', w.bindings.aliceInbox, mails(24, 1));
  deliver(w.db, 'alice', w.bindings.aliceArchive, mails(8, 101));
  const generation = beginGeneration(w.db, { provider: 'openai-compatible', model: 'signs', dimensions: DIMENSIONS, distance: 'cosine' }, T0).id;
  promoteGeneration(w.db, generation, T0);
  const ids: number[] = [];
  for (const [binding, uids] of [
    [w.bindings.aliceInbox, Array.from({ length: 24 }, (_, i) => i + 1)],
    [w.bindings.aliceArchive, Array.from({ length: 8 }, (_, i) => i + 101)],
  ] as const) {
    for (const uid of uids) {
      const id = idOf(w.db, binding, uid);
      ids.push(id);
      embed(w, generation, id, vectorOf(uid % TOPICS, uid / 1000));
    }
  }
  return { world: w, generation, ids };
}

function embed(w: World, generation: number, messageId: number, vector: Float32Array): void {
  const passages = many<{ id: number }>(w.db.prepare('SELECT id FROM passages WHERE message_id = ?'), [messageId]);
  writeVectors(
    w.db,
    generation,
    passages.map((p) => ({ passageId: p.id, vector })),
  );
}

function inRead<T>(w: World, fn: () => T): T {
  return w.db.transaction(fn).deferred();
}

const ids = (found: ReadonlyArray<{ messageId: number }>) => found.map((m) => m.messageId);

t.test('the index answers what the exact scan answers', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  t.ok(loadIndex(db, s.generation), 'loaded');
  t.equal(heldIndex(db, s.generation)?.live, many(db.prepare('SELECT 1 FROM passage_vectors')).length, 'one row per passage vector');
  for (let topic = 0; topic < TOPICS; topic++) {
    const query: NearestQuery = { generation: s.generation, queryVector: vectorOf(topic), bindingIds: [bindings.aliceInbox, bindings.aliceArchive], limit: 4 };
    const exact = inRead(s.world, () => nearestMessages(db, query));
    const fast = inRead(s.world, () => nearestMessagesFast(db, query, FORCED));
    t.same(fast, exact, `topic ${topic}: same messages, order and distances`);
  }
});

t.test('restricted to some messages (a filter’s mail), the index answers what the exact ranking of them answers', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  const scope = [bindings.aliceInbox, bindings.aliceArchive];
  // Every third message: the mail a sender filter would let through.
  const some = s.ids.filter((_, i) => i % 3 === 0);
  const query = (topic: number, limit: number): NearestQuery => ({ generation: s.generation, queryVector: vectorOf(topic), bindingIds: scope, limit });
  t.equal(
    inRead(s.world, () => nearestMessagesAmong(db, query(0, 4), some)),
    null,
    'the index not loaded yet: no answer, for the exact ranking',
  );
  loadIndex(db, s.generation);
  for (let topic = 0; topic < TOPICS; topic++) {
    const everything = inRead(s.world, () => nearestMessages(db, query(topic, s.ids.length)));
    const exact = everything.filter((m) => some.includes(m.messageId)).slice(0, 3);
    // Enough candidates for every row of those messages (22): exact, whatever the signs say.
    const all = inRead(s.world, () => nearestMessagesAmong(db, query(topic, 3), some, { candidatesPerResult: 8 }));
    t.same(all, exact, `topic ${topic}: the same of those messages, order and distances`);
    // Six candidates: the nearest still found by its signs, and nothing of other mail.
    const few = inRead(s.world, () => nearestMessagesAmong(db, query(topic, 3), some, FORCED)) ?? [];
    t.same(few[0], exact[0], `topic ${topic}: the nearest of them through six candidates`);
    t.ok(
      few.every((m) => some.includes(m.messageId)),
      'only those messages',
    );
  }
  t.same(inRead(s.world, () => nearestMessagesAmong(db, query(1, 50), some, FORCED))?.length, some.length, 'fewer of them than asked: all of them');
});

t.test('the folders and the received range hold', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  loadIndex(db, s.generation);
  const archive = inRead(s.world, () =>
    nearestMessagesFast(db, { generation: s.generation, queryVector: vectorOf(5), bindingIds: [bindings.aliceArchive], limit: 1 }, FORCED),
  );
  t.same(
    ids(archive),
    ids(inRead(s.world, () => nearestMessages(db, { generation: s.generation, queryVector: vectorOf(5), bindingIds: [bindings.aliceArchive], limit: 1 }))),
  );
  t.ok(
    archive.every((m) => m.bindingId === bindings.aliceArchive),
    'archive only',
  );
  t.same(
    inRead(s.world, () => nearestMessagesFast(db, { generation: s.generation, queryVector: vectorOf(5), bindingIds: [bindings.bobInbox], limit: 3 }, FORCED)),
    [],
    'a folder without vectors: nothing',
  );
  // Inbox uids 1–24 arrive at T0 + uid hours: from uid 10 to before uid 20.
  const ranged: NearestQuery = {
    generation: s.generation,
    queryVector: vectorOf(3),
    bindingIds: [bindings.aliceInbox],
    receivedFrom: T0 + 10 * HOUR,
    receivedBelow: T0 + 20 * HOUR,
    limit: 2,
  };
  const fast = inRead(s.world, () => nearestMessagesFast(db, ranged, FORCED));
  t.same(
    fast,
    inRead(s.world, () => nearestMessages(db, ranged)),
  );
  t.same(ids(fast), [idOf(db, bindings.aliceInbox, 11), idOf(db, bindings.aliceInbox, 19)], 'topic 3 within the range: uids 11 and 19');
});

t.test('mail embedded after loading is found; a rewritten vector moves; deleted vectors never come back', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  loadIndex(db, s.generation);
  const before = heldIndex(db, s.generation)!.rows;
  const query = (topic: number): NearestQuery => ({ generation: s.generation, queryVector: vectorOf(topic), bindingIds: [bindings.aliceInbox], limit: 3 });

  deliver(db, 'alice', bindings.aliceInbox, [{ uid: 50, subject: 'Late', body: 'Arrived after the index.' }]);
  const late = idOf(db, bindings.aliceInbox, 50);
  embed(s.world, s.generation, late, vectorOf(2));
  t.equal(ids(inRead(s.world, () => nearestMessagesFast(db, query(2), FORCED)))[0], late, 'the new mail leads its topic');
  t.ok(heldIndex(db, s.generation)!.rows > before, 'read as a delta, the index not rebuilt');

  // uid 4 (topic 4) rewritten onto topic 6's axis: it leaves topic 4 and leads topic 6.
  const moved = idOf(db, bindings.aliceInbox, 4);
  embed(s.world, s.generation, moved, vectorOf(6));
  t.notOk(ids(inRead(s.world, () => nearestMessagesFast(db, query(4), FORCED))).includes(moved), 'gone from its old topic');
  t.equal(ids(inRead(s.world, () => nearestMessagesFast(db, query(6), FORCED)))[0], moved, 'first in its new one');

  // Topic 5: uids 5, 13, 21; the vectors of 13 and 21 deleted (as a tombstone or an erasure does).
  const deleted = [idOf(db, bindings.aliceInbox, 13), idOf(db, bindings.aliceInbox, 21)];
  deleteMessageVectors(db, deleted);
  for (let i = 0; i < 2; i++) {
    const found = inRead(s.world, () => nearestMessagesFast(db, query(5), FORCED));
    t.equal(found[0]?.messageId, idOf(db, bindings.aliceInbox, 5), `search ${i + 1}: the one left of the topic leads`);
    t.notOk(
      ids(found).some((id) => deleted.includes(id)),
      'no deleted mail',
    );
  }
  t.ok(heldIndex(db, s.generation)!.dead >= 2, 'their rows dropped from the index');
});

t.test('a new serving generation is loaded in the background and answered exactly meanwhile', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  const slices: Array<() => void> = [];
  scheduleSlicesWith((slice) => slices.push(slice));
  t.teardown(() => scheduleSlicesWith((slice) => setImmediate(slice)));
  loadIndex(db, s.generation);

  const next = beginGeneration(db, { provider: 'openai-compatible', model: 'signs-2', dimensions: DIMENSIONS, distance: 'cosine' }, T0 + 1).id;
  // The new model places every message one topic further on.
  for (const [i, id] of s.ids.entries()) {
    const uid = i < 24 ? i + 1 : i - 24 + 101;
    embed(s.world, next, id, vectorOf((uid + 1) % TOPICS, uid / 1000));
  }
  promoteGeneration(db, next, T0 + 1);
  const query: NearestQuery = { generation: next, queryVector: vectorOf(1), bindingIds: [bindings.aliceInbox], limit: 3 };
  const exact = inRead(s.world, () => nearestMessages(db, query));
  t.same(
    inRead(s.world, () => nearestMessagesFast(db, query, FORCED)),
    exact,
    'before loading: the exact answer',
  );
  t.equal(heldIndex(db, s.generation), undefined, 'the old generation is forgotten');
  t.ok(slices.length > 0, 'a load is scheduled');
  while (slices.length > 0) slices.shift()!();
  t.equal(heldIndex(db, next)?.live, s.ids.length, 'loaded: every message of the new generation (one passage each)');
  t.same(
    inRead(s.world, () => nearestMessagesFast(db, query, FORCED)),
    exact,
    'after loading: the same answer',
  );
  t.same(ids(exact), [idOf(db, bindings.aliceInbox, 8), idOf(db, bindings.aliceInbox, 16), idOf(db, bindings.aliceInbox, 24)]);
});

t.test('a load in slices misses nothing written between them', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  const slices: Array<() => void> = [];
  scheduleSlicesWith((slice) => slices.push(slice), 5);
  t.teardown(() => scheduleSlicesWith((slice) => setImmediate(slice)));
  const query = (topic: number): NearestQuery => ({ generation: s.generation, queryVector: vectorOf(topic), bindingIds: [bindings.aliceInbox], limit: 1 });
  inRead(s.world, () => nearestMessagesFast(db, query(0), FORCED));
  slices.shift()!();
  slices.shift()!();
  t.ok(slices.length > 0, 'the load is under way: 10 of 32 rows read');
  // Written behind the key pass's position (the inbox comes first): only the write order finds it.
  deliver(db, 'alice', bindings.aliceInbox, [{ uid: 60, subject: 'Between', body: 'Arrived between two slices.', at: T0 - HOUR }]);
  const between = idOf(db, bindings.aliceInbox, 60);
  embed(s.world, s.generation, between, vectorOf(7));
  // A rewrite of a row the key pass has read already: uid 1 (topic 1) onto topic 0.
  embed(s.world, s.generation, idOf(db, bindings.aliceInbox, 1), vectorOf(0, 0.0001));
  while (slices.length > 0) slices.shift()!();
  t.equal(heldIndex(db, s.generation)?.live, 33, 'every row, once');
  // Four rows share each topic's signature: enough candidates for all of them.
  const tuning = { exactScopeRows: 0, candidatesPerResult: 4 };
  t.equal(inRead(s.world, () => nearestMessagesFast(db, query(7), tuning))[0]?.messageId, between, 'the mail written between slices');
  t.equal(inRead(s.world, () => nearestMessagesFast(db, query(0), tuning))[0]?.messageId, idOf(db, bindings.aliceInbox, 1), 'the rewritten vector');
});

t.test('an index holding many rows deleted since is loaded again', async (t) => {
  const s = stored(t);
  const { db, bindings } = s.world;
  const slices: Array<() => void> = [];
  scheduleSlicesWith((slice) => slices.push(slice));
  t.teardown(() => scheduleSlicesWith((slice) => setImmediate(slice)));
  loadIndex(db, s.generation);
  const query: NearestQuery = { generation: s.generation, queryVector: vectorOf(2), bindingIds: [bindings.aliceInbox, bindings.aliceArchive], limit: 2 };
  // -1, not 0: a count is due when more than countEveryMs passed, and two searches can fall in one millisecond.
  const counted = { ...FORCED, countEveryMs: -1 };
  inRead(s.world, () => nearestMessagesFast(db, query, counted));
  while (slices.length > 0) slices.shift()!();
  t.ok(heldIndex(db, s.generation), 'nothing deleted: the index stays');
  // The archive erased: 8 of 32 messages, rows never candidates of a topic-2 query in the inbox.
  deleteMessageVectors(db, s.ids.slice(24));
  inRead(s.world, () => nearestMessagesFast(db, { ...query, bindingIds: [bindings.aliceInbox] }, counted));
  while (slices.length > 0) slices.shift()!();
  t.ok(heldIndex(db, s.generation), 'a quarter deleted: it stays');
  deleteMessageVectors(db, s.ids.slice(0, 4));
  inRead(s.world, () => nearestMessagesFast(db, { ...query, bindingIds: [bindings.aliceInbox] }, counted));
  while (slices.length > 0) slices.shift()!();
  t.equal(heldIndex(db, s.generation), undefined, 'more than a quarter: dropped, to be loaded again');
  t.same(
    inRead(s.world, () => nearestMessagesFast(db, query, counted)),
    inRead(s.world, () => nearestMessages(db, query)),
    'meanwhile, the exact answer',
  );
});

t.test('signatures: Hamming order, scope, replacement and dropping (no store)', async (t) => {
  const index = new SignatureIndex(DIMENSIONS, 2);
  const bytes = (v: Float32Array) => new Uint8Array(v.buffer);
  for (let topic = 0; topic < TOPICS; topic++)
    index.add({ passageId: topic + 1, messageId: topic + 1, bindingId: 1 + (topic % 2), received: topic, vector: bytes(vectorOf(topic)) });
  const all = { bindingIds: [1, 2], from: -1, below: Number.MAX_SAFE_INTEGER };
  t.same(index.candidates(vectorOf(3), all, 1).passageIds, [4], 'the same sign pattern is nearest');
  t.same(index.candidates(vectorOf(3), { ...all, bindingIds: [1] }, 1).inScope, 4, 'one binding: half the rows');
  t.notOk(index.candidates(vectorOf(3), { ...all, bindingIds: [1] }, 8).passageIds.includes(4), 'a row of another binding is never a candidate');
  t.same(index.candidates(vectorOf(3), { ...all, from: 4 }, 8).passageIds.sort(), [5, 6, 7, 8], 'received range');
  index.add({ passageId: 4, messageId: 4, bindingId: 2, received: 3, vector: bytes(vectorOf(6)) });
  t.equal(index.live, TOPICS, 'a rewrite replaces the row');
  t.same(index.candidates(vectorOf(6), all, 2).passageIds.sort(), [4, 7]);
  index.drop(7);
  t.same(index.candidates(vectorOf(6), all, 1).passageIds, [4], 'a dropped row is no candidate');
  t.equal(index.rowsIn([1]), 3, 'rows per binding follow the drop');
});

t.test('signatures: a scope of some messages holds their rows only, each once (no store)', async (t) => {
  const index = new SignatureIndex(DIMENSIONS, 2);
  const bytes = (v: Float32Array) => new Uint8Array(v.buffer);
  // Messages 1–4, two passages each, in bindings 1 and 2 by message; added interleaved, as a load by key order does.
  for (let passage = 1; passage <= 8; passage++) {
    const messageId = ((passage - 1) % 4) + 1;
    index.add({ passageId: passage, messageId, bindingId: 1 + (messageId % 2), received: passage, vector: bytes(vectorOf(passage % TOPICS)) });
  }
  const all = { bindingIds: [1, 2], from: -1, below: Number.MAX_SAFE_INTEGER };
  const of = (messages: number[], scope = all) => index.candidates(vectorOf(0), { ...scope, messages }, 8);
  t.same(of([2, 3]).passageIds.sort(), [2, 3, 6, 7], 'the rows of those messages, whatever their place');
  t.equal(of([2, 3]).inScope, 4);
  t.equal(of([2, 2, 3]).inScope, 4, 'a message listed twice counts its rows once');
  t.same(of([2, 3], { ...all, bindingIds: [1] }).passageIds.sort(), [2, 6], 'the folders still hold (message 3 is in binding 2)');
  t.same(of([2, 3], { ...all, from: 5 }).passageIds.sort(), [6, 7], 'the received range still holds');
  t.same(of([9, 100_000]).inScope, 0, 'a message with no rows, or beyond any held: none');
  index.drop(6);
  t.same(of([2]).passageIds, [2], 'a dropped row is out');
  index.add({ passageId: 2, messageId: 2, bindingId: 1, received: 9, vector: bytes(vectorOf(3)) });
  t.same(of([2]).passageIds, [2], 'a rewritten passage: its new row only');
  t.equal(of([2], { ...all, from: 9 }).inScope, 1, 'with its new received time');
});

t.test('signatures: the Hamming distance is exact at any width (no store)', async (t) => {
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed / 2 ** 32 - 0.5;
  };
  for (const dimensions of [6, 384, 512, 1200, 3000]) {
    const vectors = Array.from({ length: 300 }, () => Float32Array.from({ length: dimensions }, random));
    const index = new SignatureIndex(dimensions);
    for (const [i, v] of vectors.entries()) index.add({ passageId: i + 1, messageId: i + 1, bindingId: 1, received: 0, vector: new Uint8Array(v.buffer) });
    const query = Float32Array.from({ length: dimensions }, random);
    const hamming = (v: Float32Array) => v.reduce((n, x, i) => n + (x < 0 !== query[i]! < 0 ? 1 : 0), 0);
    const naive = vectors.map(hamming).sort((a, b) => a - b);
    const { passageIds } = index.candidates(query, { bindingIds: [1], from: -1, below: Number.MAX_SAFE_INTEGER }, 20);
    t.same(
      passageIds.map((id) => hamming(vectors[id - 1]!)).sort((a, b) => a - b),
      naive.slice(0, 20),
      `${dimensions} dimensions: the 20 nearest by sign bits`,
    );
  }
});

t.test('signatures: a pool by sign bits is narrowed by the query’s own components (no store)', async (t) => {
  const index = new SignatureIndex(DIMENSIONS);
  const query = new Float32Array(DIMENSIONS).fill(0.1);
  query[0] = 0.9;
  query[1] = 0.01;
  const flipped = (i: number) => {
    const v = new Float32Array(DIMENSIONS).fill(0.1);
    v[i] = -0.1;
    return new Uint8Array(v.buffer);
  };
  // Both one sign away from the query: the first on its heaviest component, the second on its lightest.
  index.add({ passageId: 1, messageId: 1, bindingId: 1, received: 0, vector: flipped(0) });
  index.add({ passageId: 2, messageId: 2, bindingId: 1, received: 0, vector: flipped(1) });
  const all = { bindingIds: [1], from: -1, below: Number.MAX_SAFE_INTEGER };
  t.same(index.candidates(query, all, 1).passageIds, [1], 'by Hamming distance alone: a tie, the earlier row');
  t.same(index.candidates(query, all, 1, 2).passageIds, [2], 'narrowed from a pool of two: the sign that weighs least in the query');
});

t.test('signatures: the narrowing keeps the best by two bits a component at any width (no store)', async (t) => {
  let seed = 11;
  const random = () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed / 2 ** 32 - 0.5;
  };
  for (const dimensions of [6, 384, 512, 1200]) {
    const vectors = Array.from({ length: 300 }, () => Float32Array.from({ length: dimensions }, random));
    const index = new SignatureIndex(dimensions);
    for (const [i, v] of vectors.entries()) index.add({ passageId: i + 1, messageId: i + 1, bindingId: 1, received: 0, vector: new Uint8Array(v.buffer) });
    const query = Float32Array.from({ length: dimensions }, random);
    // Each component quantised to ±1, or ±3 where it is large for its row (above 0.98 of its root mean square).
    const twoBitDot = (v: Float32Array) => {
      const cut = 0.98 * Math.sqrt(v.reduce((sum, x) => sum + x * x, 0) / dimensions);
      return v.reduce((sum, x, i) => sum + (x < 0 ? -1 : 1) * (Math.abs(x) > cut ? 3 : 1) * query[i]!, 0);
    };
    const naive = vectors.map(twoBitDot).sort((a, b) => b - a);
    // The pool is every row: the narrowing alone decides.
    const { passageIds } = index.candidates(query, { bindingIds: [1], from: -1, below: Number.MAX_SAFE_INTEGER }, 20, 300);
    const kept = passageIds.map((id) => twoBitDot(vectors[id - 1]!)).sort((a, b) => b - a);
    t.equal(kept.length, 20);
    t.ok(
      kept.every((score, i) => Math.abs(score - naive[i]!) < 1e-9),
      `${dimensions} dimensions: the 20 best by the query's components against the rows' two bits`,
    );
  }
});
