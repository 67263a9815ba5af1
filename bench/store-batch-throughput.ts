/**
 * Throughput of storeBatch with realistic batches: 10,000 messages of about
 * 63 KB (a 6 KB text body and a 56 KB base64 attachment) with their parse
 * results, 200 per transaction, synchronous=FULL, on a file in the temporary
 * directory (it writes about 700 MB). A measurement, not a test:
 *
 *   npx tap bench/store-batch-throughput.ts
 *
 * MAILCAIRN_BENCH_PARSED=0 stores the same messages unparsed (no search
 * document, no passages) to show what indexing costs.
 * Only the storeBatch calls are timed; building the messages is not.
 * Figures are recorded in docs/storage.md, "Mailbox writes".
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { storeBatch, type FetchedMessage } from '../runtime/store/mailbox/store-batch.ts';
import { aliceFolders, count, freshStore, parsedOf } from '../test/runtime/store/mailbox/helpers.ts';

const total = Number(process.env.MAILCAIRN_BENCH_MESSAGES ?? 10_000);
const perBatch = 200;
const withParse = process.env.MAILCAIRN_BENCH_PARSED !== '0';

// A seeded vocabulary so the FTS index sees realistic, repeating words.
let seed = 42;
const random = (): number => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};
const vocabulary = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'abcdefghij'[i % 10]}`);
const words = (n: number): string => Array.from({ length: n }, () => vocabulary[Math.floor(random() * random() * vocabulary.length)]).join(' ');

function message(uid: number): FetchedMessage {
  const body = words(900); // about 6 KB of text
  const attachment = randomBytes(42_000).toString('base64').replace(/.{76}/g, '$&\r\n'); // about 56 KB encoded
  const raw = Buffer.from(
    `From: Sender <sender${uid % 97}@example.org>\r\nTo: alice@example.org\r\nSubject: ${words(6)}\r\nMessage-ID: <m${uid}@example.org>\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n${body}\r\n` +
      `--b\r\nContent-Type: application/pdf; name=report.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${attachment}\r\n--b--\r\n`,
  );
  const parsed = parsedOf(uid, { subject: words(6), body, attachment: 'report.pdf' });
  const passages = [0, 1, 2, 3].map((i) => body.slice(i * 1500, (i + 1) * 1500));
  return {
    uid,
    flags: ['\\Seen'],
    keywords: [],
    modseq: BigInt(uid),
    internalDate: uid,
    size: raw.length,
    state: 'stored',
    raw,
    parsed: withParse ? { ...parsed, passages } : null,
  };
}

t.test('storeBatch throughput', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const times: number[] = [];
  let bytes = 0;
  let epoch: number | null = null;
  for (let first = 1; first <= total; first += perBatch) {
    const messages = Array.from({ length: Math.min(perBatch, total - first + 1) }, (_, i) => message(first + i));
    bytes += messages.reduce((sum, m) => sum + m.size, 0);
    const started = performance.now();
    const result = storeBatch(db, {
      accountId: 'alice',
      bindingId: inbox.id,
      uidValidity: 1,
      expectedEpoch: epoch,
      messages,
      advanceTo: { lastUid: messages.at(-1)!.uid, highestModseq: BigInt(messages.at(-1)!.uid) },
      now: Date.now(),
    });
    times.push(performance.now() - started);
    if (!result.ok) throw new Error('refused');
    epoch = result.epoch;
  }
  t.equal(count(db, 'messages'), total);
  const seconds = times.reduce((a, b) => a + b, 0) / 1000;
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  t.comment(
    `${total} messages${withParse ? '' : ' (unparsed)'}, ${(bytes / total / 1024).toFixed(1)} KB average, ${times.length} batches of ${perBatch}: ` +
      `${seconds.toFixed(2)} s in storeBatch, ${(total / seconds).toFixed(0)} messages/s, ${(bytes / 1e6 / seconds).toFixed(1)} MB/s; ` +
      `batch median ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`,
  );
});
