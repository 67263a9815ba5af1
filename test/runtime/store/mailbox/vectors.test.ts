import t, { type Test } from 'tap';
import { syncBindings } from '../../../../runtime/store/mailbox/bindings.ts';
import { applyDerivation, erasePass } from '../../../../runtime/store/mailbox/maintenance.ts';
import { tombstone } from '../../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import {
  beginGeneration,
  coverage,
  deleteMessageVectors,
  type Distance,
  generation,
  generations,
  lastVectorSeq,
  moveMessageVectors,
  nearestMessages,
  type NearestQuery,
  promoteGeneration,
  purgeRetiredVectors,
  writeVectors,
} from '../../../../runtime/store/mailbox/vectors.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { many, one, run } from '../../../../runtime/store/rows.ts';
import { count, fetched, freshStore, idOf, parsedOf } from './helpers.ts';

const DIMS = 16;

/** A seeded generator, so every run compares the same vectors. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
}

type Mailbox = { db: Database; inbox: number; archive: number; bobInbox: number };

/** alice: inbox uids 1..inboxCount, archive 1..archiveCount; bob: inbox 1..bobCount. Two passages each. */
function mailbox(t: Parameters<typeof freshStore>[0], inboxCount = 30, archiveCount = 12, bobCount = 8): Mailbox {
  const db = freshStore(t);
  const alice = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive' },
    ],
    1,
  );
  const [bob] = syncBindings(db, 'bob', [{ alias: 'inbox', path: 'INBOX' }], 1);
  const store = (accountId: string, bindingId: number, n: number) => {
    const uids = Array.from({ length: n }, (_, i) => i + 1);
    const result = storeBatch(db, {
      accountId,
      bindingId,
      uidValidity: 7,
      expectedEpoch: null,
      messages: uids.map((uid) => fetched(uid)),
      advanceTo: { lastUid: n, highestModseq: 9n },
      now: 2,
    });
    if (!result.ok) throw new Error('setup refused');
  };
  const inbox = alice.find((b) => b.alias === 'inbox')!.id;
  const archive = alice.find((b) => b.alias === 'archive')!.id;
  store('alice', inbox, inboxCount);
  store('alice', archive, archiveCount);
  store('bob', bob!.id, bobCount);
  return { db, inbox, archive, bobInbox: bob!.id };
}

type Passage = { id: number; message_id: number; binding_id: number; internal_date: number };

function passages(db: Database): Passage[] {
  return many<Passage>(
    db.prepare('SELECT p.id, p.message_id, m.binding_id, m.internal_date FROM passages p JOIN messages m ON m.id = p.message_id ORDER BY p.id'),
  );
}

/** A serving generation with a vector for every passage; answers the vectors by passage id. */
function embedAll(t: Test, db: Database, distance: Distance, random: () => number, dims = DIMS): { id: number; vectors: Map<number, Float32Array> } {
  const g = beginGeneration(db, { provider: 'test', model: 'random', dimensions: dims, distance }, 3);
  t.ok(promoteGeneration(db, g.id, 3));
  const vectors = new Map<number, Float32Array>();
  for (const p of passages(db)) vectors.set(p.id, Float32Array.from({ length: dims }, random));
  const { written } = writeVectors(
    db,
    g.id,
    [...vectors].map(([passageId, vector]) => ({ passageId, vector })),
  );
  t.equal(written, vectors.size);
  return { id: g.id, vectors };
}

function distanceOf(distance: Distance, a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
    l2 += (a[i]! - b[i]!) ** 2;
  }
  return distance === 'cosine' ? 1 - dot / Math.sqrt(na * nb) : Math.sqrt(l2);
}

/** Brute force: every passage in scope, nearest per message, best `limit` messages. */
function bruteForce(db: Database, vectors: Map<number, Float32Array>, distance: Distance, q: NearestQuery): number[] {
  const best = new Map<number, number>();
  for (const p of passages(db)) {
    if (!q.bindingIds.includes(p.binding_id)) continue;
    if (q.receivedFrom !== undefined && p.internal_date < q.receivedFrom) continue;
    if (q.receivedBelow !== undefined && p.internal_date >= q.receivedBelow) continue;
    const d = distanceOf(distance, q.queryVector, vectors.get(p.id)!);
    best.set(p.message_id, Math.min(best.get(p.message_id) ?? Number.POSITIVE_INFINITY, d));
  }
  return [...best]
    .sort((a, b) => a[1] - b[1])
    .slice(0, q.limit)
    .map(([id]) => id);
}

for (const distance of ['cosine', 'l2'] as const) {
  t.test(`the nearest messages are found exactly (${distance}): recall 1.0 against brute force`, async (t) => {
    const m = mailbox(t);
    const random = generator(distance === 'cosine' ? 1 : 2);
    const { id, vectors } = embedAll(t, m.db, distance, random);
    const scopes = [[m.inbox, m.archive, m.bobInbox], [m.inbox], [m.archive, m.bobInbox]];
    let compared = 0;
    for (let i = 0; i < 20; i++) {
      const queryVector = Float32Array.from({ length: DIMS }, random);
      for (const bindingIds of scopes) {
        const query = { generation: id, queryVector, bindingIds, limit: 10 };
        const found = nearestMessages(m.db, query);
        t.same(
          found.map((r) => r.messageId),
          bruteForce(m.db, vectors, distance, query),
        );
        for (const r of found) t.ok(bindingIds.includes(r.bindingId));
        compared++;
      }
    }
    t.equal(compared, 60);
    // The distance answered is the nearest passage's.
    const [passage] = passages(m.db);
    const [first] = nearestMessages(m.db, { generation: id, queryVector: vectors.get(passage!.id)!, bindingIds: [passage!.binding_id], limit: 1 });
    t.equal(first?.messageId, passage!.message_id, 'a passage\u2019s own vector finds its message first');
    t.ok(Math.abs(first!.distance) < 1e-6);
  });
}

t.test('the scope applies before ranking: folders, accounts, received-time range', async (t) => {
  const m = mailbox(t);
  const { id, vectors } = embedAll(t, m.db, 'cosine', generator(3));
  const all = passages(m.db);
  const inArchive = all.find((p) => p.binding_id === m.archive)!;
  const inBob = all.find((p) => p.binding_id === m.bobInbox)!;
  for (const target of [inArchive, inBob]) {
    const found = nearestMessages(m.db, { generation: id, queryVector: vectors.get(target.id)!, bindingIds: [m.inbox], limit: 10 });
    t.equal(found.length, 10, 'ten asked of a folder of 30: ten answered');
    t.ok(
      found.every((r) => r.bindingId === m.inbox),
      'a nearer vector in another folder or account is never returned',
    );
  }
  t.equal(
    nearestMessages(m.db, { generation: id, queryVector: vectors.get(inBob.id)!, bindingIds: [m.bobInbox], limit: 10 }).length,
    8,
    'a folder of 8 answers 8',
  );
  t.same(nearestMessages(m.db, { generation: id, queryVector: vectors.get(inBob.id)!, bindingIds: [], limit: 10 }), [], 'no binding, nothing');

  // internal dates are 1_700_000_000_000 + uid.
  const from = 1_700_000_000_000 + 5;
  const below = 1_700_000_000_000 + 9;
  const dated = nearestMessages(m.db, {
    generation: id,
    queryVector: vectors.get(inArchive.id)!,
    bindingIds: [m.inbox, m.archive],
    receivedFrom: from,
    receivedBelow: below,
    limit: 50,
  });
  const expected = all.filter((p) => p.binding_id !== m.bobInbox && p.internal_date >= from && p.internal_date < below).map((p) => p.message_id);
  t.same(dated.map((r) => r.messageId).sort(), [...new Set(expected)].sort(), 'uids 5 to 8 of both folders, inclusive from, exclusive below');
  t.equal(dated.length, 8);
});

t.test('ties are deterministic: the later received, then the larger id', async (t) => {
  const m = mailbox(t, 6, 0, 0);
  const g = beginGeneration(m.db, { provider: 'test', model: 'same', dimensions: 4, distance: 'l2' }, 3);
  const same = new Float32Array([1, 2, 3, 4]);
  writeVectors(
    m.db,
    g.id,
    passages(m.db).map((p) => ({ passageId: p.id, vector: same })),
  );
  // Two messages share a received time: the larger id goes first.
  run(m.db.prepare('UPDATE passage_vectors SET received = 1 WHERE message_id IN (?, ?)'), [idOf(m.db, m.inbox, 2), idOf(m.db, m.inbox, 3)]);
  const expected = [6, 5, 4, 1, 3, 2].map((uid) => idOf(m.db, m.inbox, uid));
  for (let i = 0; i < 3; i++) {
    t.same(
      nearestMessages(m.db, { generation: g.id, queryVector: same, bindingIds: [m.inbox], limit: 10 }).map((r) => r.messageId),
      expected,
    );
  }
  t.same(
    nearestMessages(m.db, { generation: g.id, queryVector: same, bindingIds: [m.inbox], limit: 2 }).map((r) => r.messageId),
    expected.slice(0, 2),
    'a smaller limit answers the same head',
  );
});

t.test('a moved message takes its vectors to its new folder, with a new write sequence', async (t) => {
  const m = mailbox(t, 3, 2, 0);
  const g = beginGeneration(m.db, { provider: 'test', model: 'm', dimensions: 4, distance: 'cosine' }, 3);
  writeVectors(
    m.db,
    g.id,
    passages(m.db).map((p) => ({ passageId: p.id, vector: new Float32Array([1, 0, 0, p.id]) })),
  );
  const moving = idOf(m.db, m.inbox, 2);
  const before = lastVectorSeq(m.db, g.id);
  const rows = count(m.db, 'passage_vectors', 'message_id = ?', [moving]);
  t.equal(moveMessageVectors(m.db, moving, m.archive), rows, 'every vector of the message moved');
  const query = { generation: g.id, queryVector: new Float32Array([1, 0, 0, 0]), limit: 50 };
  t.notOk(
    nearestMessages(m.db, { ...query, bindingIds: [m.inbox] }).some((r) => r.messageId === moving),
    'no longer found in the folder it left',
  );
  t.ok(
    nearestMessages(m.db, { ...query, bindingIds: [m.archive] }).some((r) => r.messageId === moving),
    'found in the folder it went to',
  );
  t.ok(lastVectorSeq(m.db, g.id) > before, 'stamped anew, so an in-memory index reads it again');
});

t.test('erasure, tombstones and re-derivation delete the vectors themselves (no cascade needed)', async (t) => {
  const m = mailbox(t, 4, 3, 2);
  const { id } = embedAll(t, m.db, 'cosine', generator(4));
  m.db.exec('PRAGMA foreign_keys = OFF');
  t.teardown(() => m.db.exec('PRAGMA foreign_keys = ON'));

  const expunged = idOf(m.db, m.inbox, 2);
  tombstone(m.db, m.inbox, 7, [2], 'expunged', 5);
  t.equal(count(m.db, 'passage_vectors', 'message_id = ?', [expunged]), 0, 'a tombstone carries no vector');
  t.equal(count(m.db, 'passage_vectors', 'binding_id = ?', [m.inbox]), 6, 'the other three messages keep theirs');

  const rederived = idOf(m.db, m.inbox, 3);
  t.ok(applyDerivation(m.db, rederived, parsedOf(3, { subject: 'new parse' }), 6));
  t.equal(count(m.db, 'passage_vectors', 'message_id = ?', [rederived]), 0, 'a new parse drops the vectors of the old passages');

  syncBindings(m.db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 7);
  t.same(erasePass(m.db, 'alice', 'archive', 10, 8), { erasedEmailCount: 3, emailsRemain: false, remainingEmailCount: 0 });
  t.equal(count(m.db, 'passage_vectors', 'binding_id = ?', [m.archive]), 0, 'folder erasure removes the vectors with the mail');
  t.equal(count(m.db, 'passage_vectors', 'binding_id = ?', [m.bobInbox]), 4, 'other accounts untouched');

  t.equal(deleteMessageVectors(m.db, [idOf(m.db, m.bobInbox, 1)]), 2);
  t.equal(deleteMessageVectors(m.db, []), 0);
  t.same(many(m.db.prepare('PRAGMA foreign_key_check')), [], 'nothing left dangling');
  t.ok(
    nearestMessages(m.db, { generation: id, queryVector: new Float32Array(DIMS).fill(1), bindingIds: [m.inbox, m.archive], limit: 10 }).every(
      (r) => r.bindingId === m.inbox,
    ),
  );
});

t.test('writing skips passages gone meanwhile, and checks every vector', async (t) => {
  const m = mailbox(t, 2, 0, 0);
  const g = beginGeneration(m.db, { provider: 'test', model: 'm', dimensions: 4, distance: 'cosine' }, 3);
  const [a, b, c] = passages(m.db);
  tombstone(m.db, m.inbox, 7, [2], 'expunged', 4);
  const v = new Float32Array([9, 9, 1, 2, 3, 4, 9]).subarray(2, 6);
  t.same(
    writeVectors(m.db, g.id, [
      { passageId: a!.id, vector: v },
      { passageId: c!.id, vector: v },
      { passageId: 999_999, vector: v },
    ]),
    { written: 1, skipped: 2 },
  );
  t.same(
    one<{ v: string }>(m.db.prepare('SELECT vector_extract(vector) AS v FROM passage_vectors WHERE passage_id = ?'), [a!.id]),
    { v: '[1,2,3,4]' },
    'a subarray is stored as its own four floats, not its parent buffer',
  );
  t.same(writeVectors(m.db, g.id, [{ passageId: a!.id, vector: new Float32Array([4, 3, 2, 1]) }]), { written: 1, skipped: 0 }, 'rewriting replaces');
  t.equal(count(m.db, 'passage_vectors'), 1);
  t.throws(() => writeVectors(m.db, g.id, [{ passageId: b!.id, vector: new Float32Array(3) }]), RangeError, 'wrong dimensions');
  t.throws(() => writeVectors(m.db, g.id, [{ passageId: b!.id, vector: new Float32Array(4) }]), RangeError, 'a zero vector has no cosine');
  t.throws(() => writeVectors(m.db, g.id, [{ passageId: b!.id, vector: new Float32Array([1, Number.NaN, 0, 0]) }]), RangeError);
  t.throws(
    () =>
      run(
        m.db.prepare(
          "INSERT INTO passage_vectors (generation_id, passage_id, message_id, account_id, binding_id, received, vector) VALUES (?, ?, ?, 'alice', ?, 0, zeroblob(12))",
        ),
        [g.id, b!.id, b!.message_id, m.inbox],
      ),
    /does not match its generation/,
    'the schema refuses a vector of the wrong length',
  );
  t.equal(count(m.db, 'passage_vectors'), 1, 'nothing half-written');
});

t.test('generations: one builds while one serves; their vectors never mix; retired ones are purged', async (t) => {
  const m = mailbox(t, 12, 0, 0);
  const random = generator(5);
  const first = embedAll(t, m.db, 'cosine', random, 8);
  const second = beginGeneration(m.db, { provider: 'test', model: 'bigger', dimensions: 12, distance: 'cosine' }, 10);
  t.equal(generation(m.db, first.id)?.state, 'serving', 'the serving one keeps answering while another builds');
  const some = passages(m.db).slice(0, 6);
  writeVectors(
    m.db,
    second.id,
    some.map((p) => ({ passageId: p.id, vector: Float32Array.from({ length: 12 }, random) })),
  );
  t.same(coverage(m.db, first.id, [m.inbox]), { embedded: 12, embeddable: 12 });
  t.same(coverage(m.db, second.id, [m.inbox]), { embedded: 3, embeddable: 12 });
  const q8 = Float32Array.from({ length: 8 }, random);
  t.equal(nearestMessages(m.db, { generation: first.id, queryVector: q8, bindingIds: [m.inbox], limit: 20 }).length, 12);
  const fromSecond = nearestMessages(m.db, { generation: second.id, queryVector: Float32Array.from({ length: 12 }, random), bindingIds: [m.inbox], limit: 20 });
  t.same(fromSecond.map((r) => r.messageId).sort(), [...new Set(some.map((p) => p.message_id))].sort(), 'the building generation finds only its own vectors');
  t.throws(
    () => nearestMessages(m.db, { generation: second.id, queryVector: q8, bindingIds: [m.inbox], limit: 5 }),
    RangeError,
    'a query of the wrong dimensions',
  );

  const third = beginGeneration(m.db, { provider: 'test', model: 'other', dimensions: 8, distance: 'l2' }, 11);
  t.equal(generation(m.db, second.id)?.state, 'retired', 'a new profile retires the one still building');
  t.notOk(promoteGeneration(m.db, second.id, 12), 'a retired generation cannot serve');
  t.ok(promoteGeneration(m.db, third.id, 12));
  t.same(
    generations(m.db).map((g) => [g.id, g.state]),
    [
      [first.id, 'retired'],
      [second.id, 'retired'],
      [third.id, 'serving'],
    ],
  );
  t.throws(() => writeVectors(m.db, first.id, []), /takes no vectors/);
  t.same(purgeRetiredVectors(m.db, 10), { deleted: 10, remain: true });
  t.same(purgeRetiredVectors(m.db, 100), { deleted: 20, remain: false });
  t.equal(count(m.db, 'passage_vectors'), 0);
  t.equal(count(m.db, 'embedding_generations'), 3, 'the generations stay as history');
});
