/**
 * The `realistic` profile has issue 34's shape, read back from the bytes it
 * writes rather than from the plan: the MIME kind from each message's own
 * Content-Type (and mailparser for the attachments), sizes from the raw
 * length, folders as tagged. Tolerances are for a 2,000-message run; sizes
 * are placed by rank (generator-shape.ts), so their percentiles miss only by
 * what building a message to a planned size misses.
 */
import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { generateMailbox, type GeneratedMessage } from '../harness/generator.ts';

const COUNT = 2_000;
const KIB = 1024;
const options = { seed: 34, count: COUNT, profile: 'realistic' as const };
const messages = [...generateMailbox(options)];

const digest = (ms: Iterable<GeneratedMessage>) => {
  const h = createHash('sha256');
  for (const m of ms)
    h.update(m.raw)
      .update(m.flags.join(','))
      .update(m.folder ?? '');
  return h.digest('hex');
};

/** The top-level Content-Type of a raw message, lower-cased, without parameters. */
function topType(raw: Buffer): string {
  const head = raw.subarray(0, raw.indexOf('\r\n\r\n')).toString('latin1');
  const match = /^Content-Type:\s*([^;\r\n]+)/im.exec(head);
  return (match?.[1] ?? 'text/plain').trim().toLowerCase();
}

const share = (n: number) => n / COUNT;

t.test('the same seed gives the same bytes; another seed other bytes', async (t) => {
  t.equal(digest(generateMailbox(options)), digest(messages));
  t.not(digest(generateMailbox({ ...options, seed: 35, count: 200 })), digest(generateMailbox({ ...options, count: 200 })));
});

t.test('MIME kinds in the stated shares, read from each message', async (t) => {
  const byType = new Map<string, number>();
  for (const m of messages) byType.set(topType(m.raw), (byType.get(topType(m.raw)) ?? 0) + 1);
  const of = (type: string) => share(byType.get(type) ?? 0);
  t.same([...byType.keys()].sort(), ['multipart/alternative', 'multipart/mixed', 'text/html', 'text/plain'], 'no other top-level type');
  t.ok(Math.abs(of('text/plain') - 0.35) <= 0.03, `plain ${of('text/plain')}`);
  t.ok(Math.abs(of('multipart/alternative') - 0.32) <= 0.03, `multipart/alternative ${of('multipart/alternative')}`);
  t.ok(Math.abs(of('text/html') - 0.15) <= 0.025, `HTML only ${of('text/html')}`);
  t.ok(Math.abs(of('multipart/mixed') - 0.18) <= 0.01, `with attachments (large included) ${of('multipart/mixed')}`);
  const large = messages.filter((m) => m.raw.length > KIB * KIB && topType(m.raw) === 'multipart/mixed').length;
  t.ok(Math.abs(share(large) - 0.01) <= 0.005, `${large} messages over 1 MiB with attachments`);
  t.ok(
    messages.filter((m) => m.raw.length > KIB * KIB).every((m) => topType(m.raw) === 'multipart/mixed'),
    'every message over 1 MiB carries attachments',
  );
});

t.test('folders in the stated shares; Sent is the owner’s mail', async (t) => {
  const count = (f: string) => share(messages.filter((m) => m.folder === f).length);
  t.ok(Math.abs(count('INBOX') - 0.6) <= 0.035, `INBOX ${count('INBOX')}`);
  t.ok(Math.abs(count('Archive') - 0.3) <= 0.03, `Archive ${count('Archive')}`);
  t.ok(Math.abs(count('Sent') - 0.1) <= 0.02, `Sent ${count('Sent')}`);
  t.ok(
    messages.filter((m) => m.folder === 'Sent').every((m) => /^From: Alice Example <alice@example\.org>\r$/m.test(m.raw.toString('latin1'))),
    'Sent mail is from the owner',
  );
});

t.test('size percentiles within 15% of the stated points, the maximum within 5% of 4.9 MB', async (t) => {
  const sizes = messages.map((m) => m.raw.length).sort((a, b) => a - b);
  const at = (q: number) => sizes[Math.min(COUNT - 1, Math.floor(q * COUNT))]!;
  for (const [q, want] of [
    [0.1, 4 * KIB],
    [0.5, 10 * KIB],
    [0.75, 22 * KIB],
    [0.9, 90 * KIB],
    [0.95, 190 * KIB],
    [0.99, 1100 * KIB],
  ] as const) {
    t.ok(Math.abs(at(q) / want - 1) <= 0.15, `p${q * 100} ${Math.round(at(q) / KIB)} KiB, stated ${want / KIB}`);
  }
  t.ok(Math.abs(sizes.at(-1)! / (4900 * KIB) - 1) <= 0.05, `max ${Math.round(sizes.at(-1)! / KIB)} KiB`);
  const mean = sizes.reduce((a, b) => a + b, 0) / COUNT;
  t.ok(Math.abs(mean / 63_000 - 1) <= 0.1, `mean ${Math.round(mean)} B (630 MB for 10,000 is 63,000)`);
});

/** The first bytes each declared binary type must start with once decoded. */
const MAGIC: Record<string, Buffer> = {
  'application/pdf': Buffer.from('%PDF-'),
  'image/png': Buffer.from([0x89, 0x50, 0x4e, 0x47]),
  'image/jpeg': Buffer.from([0xff, 0xd8, 0xff]),
  'application/zip': Buffer.from('PK\x03\x04'),
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': Buffer.from('PK\x03\x04'),
};

t.test('attachments decode from base64 to bytes of their declared type, with file names', async (t) => {
  const attached = messages.filter((m) => topType(m.raw) === 'multipart/mixed');
  const types = new Set<string>();
  let decoded = 0;
  for (const m of attached) {
    const parsed = await simpleParser(m.raw);
    const files = parsed.attachments;
    if (files.length === 0 || files.length !== m.attachments) {
      t.fail(`a message with attachments parsed to ${files.length}, the generator made ${m.attachments}`);
      continue;
    }
    for (const file of files) {
      types.add(file.contentType);
      const magic = MAGIC[file.contentType];
      if (magic === undefined && file.contentType !== 'text/csv') t.fail(`unexpected type ${file.contentType}`);
      if (magic && !file.content.subarray(0, magic.length).equals(magic)) t.fail(`${file.contentType} does not start with its signature`);
      if (!file.filename || !/\.(pdf|png|jpg|zip|docx|csv)$/.test(file.filename)) t.fail('an attachment without a fitting file name');
      decoded += file.size;
    }
  }
  t.ok(types.size >= 5, `${types.size} attachment types: ${[...types].sort().join(', ')}`);
  t.ok(decoded > 50 * KIB * KIB, `${Math.round(decoded / KIB / KIB)} MiB decoded`);
  const binary = attached.find((m) => /Content-Transfer-Encoding: base64\r\nContent-Disposition: attachment/.test(m.raw.toString('latin1')));
  t.ok(binary, 'binary attachments are base64 parts');
});
