/**
 * `Embeddings:PassagesPerMessage` in the store's reads: the embedding work
 * queue and the forecast take each message's first passages only, and the
 * coverage gauge counts the passages within the bound, so a generation that
 * embedded all it was asked for reads 1 (and, without a bound, the share it
 * has of every passage).
 */
import t from 'tap';
import { storeGauges } from '../../../../actors/mail-query/store-gauges.ts';
import { embeddingForecast, unembeddedSegment } from '../../../../runtime/store/mailbox/embedding-work.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import { beginGeneration, promoteGeneration, writeVectors } from '../../../../runtime/store/mailbox/vectors.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { aliceFolders, fetched, freshStore } from './helpers.ts';

const DIMS = 4;

/** Four messages of alice's inbox, two passages each (the fixtures' parse). */
function mailbox(t: Parameters<typeof freshStore>[0]): Database {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const stored = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: [1, 2, 3, 4].map((uid) => fetched(uid)),
    advanceTo: { lastUid: 4, highestModseq: 9n },
    now: 2,
  });
  if (!stored.ok) throw new Error('setup refused');
  return db;
}

const segment = (db: Database, generation: number, passagesPerMessage: number | null) =>
  unembeddedSegment(db, generation, { afterMessageId: 0, maxMessages: 100, maxCharacters: 1_000, passagesPerMessage });

const coverage = (db: Database, passagesPerMessage: number | null) =>
  storeGauges(db, { type: 'mail-query.store-gauges', scope: { accounts: [] }, spendPeriodMs: 60_000, now: 1, passagesPerMessage }).embeddingCoverage;

t.test('the queue, the forecast and the coverage count the first passages of each message', async (t) => {
  const db = mailbox(t);
  const generation = beginGeneration(db, { provider: 'test', model: 'm', dimensions: DIMS, distance: 'cosine' }, 1);
  promoteGeneration(db, generation.id, 1);

  t.equal(embeddingForecast(db, null, { maxCharacters: 1_000, passagesPerMessage: null }).passages, 8, 'unbounded: every passage');
  t.equal(embeddingForecast(db, null, { maxCharacters: 1_000, passagesPerMessage: 1 }).passages, 4, 'bounded to one: one a message');
  const first = segment(db, generation.id, 1);
  t.equal(first.passages.length, 4);
  t.ok(
    first.passages.every((p) => !p.text.includes('(second passage)')),
    'only the first passage of each message is queued',
  );
  writeVectors(
    db,
    generation.id,
    first.passages.map((p) => ({ passageId: p.passageId, vector: new Float32Array([1, 0, 0, 0]) })),
  );

  t.same(segment(db, generation.id, 1), { passages: [], lastMessageId: null }, 'with the bound, nothing is left to embed');
  t.equal(embeddingForecast(db, generation.id, { maxCharacters: 1_000, passagesPerMessage: 1 }).passages, 0);
  t.equal(coverage(db, 1), 1, 'the gauge reads whole once the passages within the bound are embedded');

  const rest = segment(db, generation.id, null);
  t.equal(rest.passages.length, 4, 'without it, the second passages are what is left');
  t.ok(rest.passages.every((p) => p.text.includes('(second passage)')));
  t.equal(embeddingForecast(db, generation.id, { maxCharacters: 1_000, passagesPerMessage: 2 }).passages, 4);
  t.equal(coverage(db, null), 0.5, 'and the gauge reads the share of every passage');
});
