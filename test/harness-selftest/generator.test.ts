/**
 * The mailbox generator is deterministic per seed, differs across seeds, and writes MIME that an
 * independent parser (mailparser) decodes back to the subjects, threads and attachments it meant;
 * the encoders it uses round-trip.
 */
import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { generateMailbox, type GeneratedMessage } from '../harness/generator.ts';
import { base64Lines, encodeText, encodeWords, quotedPrintable } from '../harness/mime-encode.ts';

const digest = (ms: Iterable<GeneratedMessage>) => {
  const h = createHash('sha256');
  for (const m of ms) h.update(m.raw).update(m.flags.join(',')).update(String(m.internalDate.getTime()));
  return h.digest('hex');
};

t.test('same seed, same mailbox; other seed, other mailbox; iterable more than once', async (t) => {
  const a = generateMailbox({ seed: 5, count: 300 });
  t.equal(digest(a), digest(a), 'iterating twice gives the same messages');
  t.equal(digest(generateMailbox({ seed: 5, count: 300 })), digest(a));
  t.not(digest(generateMailbox({ seed: 6, count: 300 })), digest(a));
  const bench = { seed: 5, count: 60, profile: 'bench' as const };
  t.equal(digest(generateMailbox(bench)), digest(generateMailbox(bench)));
});

t.test('realistic mix: sizes, dates in order, threads, flags, unique Message-IDs', async (t) => {
  const ms = [...generateMailbox({ seed: 2, count: 2000 })];
  const sizes = ms.map((m) => m.raw.length);
  const avg = sizes.reduce((a, b) => a + b, 0) / ms.length;
  t.ok(avg > 3_000 && avg < 9_000, `small profile average ${Math.round(avg)} B`);
  t.equal(new Set(ms.map((m) => m.messageId)).size, ms.length);
  const replies = ms.filter((m) => m.inReplyTo).length;
  t.ok(replies > 400 && replies < 1000, `${replies} replies`);
  t.ok(ms.filter((m) => m.attachments > 0).length > 50);
  t.ok(ms.filter((m) => m.flags.includes('\\Seen')).length > 1500);
  const years = new Set(ms.map((m) => m.internalDate.getUTCFullYear()));
  t.ok(years.size >= 6, `dates over ${years.size} years`);
  t.ok(ms.every((m, i) => i === 0 || m.internalDate.getTime() >= ms[i - 1]!.internalDate.getTime() - 600_000));
  const text = ms.map((m) => m.raw.toString('latin1')).join('\n');
  for (const needle of [
    'charset="iso-8859-1"',
    'charset="windows-1252"',
    'charset="iso-2022-jp"',
    'charset="utf-8"',
    'quoted-printable',
    'base64',
    '=?UTF-8?B?',
    'multipart/alternative',
    'multipart/mixed',
    'References: ',
  ]) {
    t.ok(text.includes(needle), needle);
  }
  t.ok(
    ms.every((m) => !/(?<!\r)\n|\r(?!\n)/.test(m.raw.toString('latin1'))),
    'CRLF line endings only',
  );
  t.ok(
    ms.every((m) =>
      m.raw
        .toString('latin1')
        .split('\r\n')
        .every((l) => l.length <= 998),
    ),
    'no line over 998',
  );
});

t.test('mailparser decodes what the generator meant', async (t) => {
  let checked = 0;
  for (const m of generateMailbox({ seed: 9, count: 400 })) {
    const parsed = await simpleParser(m.raw);
    if (parsed.subject !== m.subject) t.fail(`${m.messageId}: subject ${JSON.stringify(parsed.subject)} ≠ ${JSON.stringify(m.subject)}`);
    if (parsed.messageId !== m.messageId) t.fail(`${m.messageId}: Message-ID`);
    if (m.inReplyTo && parsed.inReplyTo !== m.inReplyTo) t.fail(`${m.messageId}: In-Reply-To`);
    const attached = parsed.attachments.filter((a) => a.contentDisposition === 'attachment').length;
    if (attached !== m.attachments) t.fail(`${m.messageId}: ${attached} attachments, meant ${m.attachments}`);
    const body = parsed.text ?? (parsed.html || '');
    if (body.includes('\ufffd')) t.fail(`${m.messageId}: undecodable body`);
    checked++;
  }
  t.equal(checked, 400);
});

t.test('encoders round-trip', async (t) => {
  t.equal(encodeText('Grüße €', 'windows-1252').toString('hex'), '4772fc df652080'.replace(' ', ''));
  t.equal(new TextDecoder('iso-2022-jp').decode(encodeText('会議 at 10時', 'iso-2022-jp')), '会議 at 10時');
  t.throws(() => encodeText('日本', 'iso-8859-1'));
  const qp = quotedPrintable(Buffer.from(`${'x'.repeat(100)} \r\na=b\t\r\n`, 'latin1')).toString('latin1');
  t.ok(qp.split('\r\n').every((l) => l.length <= 76));
  t.match(qp, /a=3Db=09\r\n$/);
  t.equal(base64Lines(Buffer.alloc(100)).toString('latin1').split('\r\n')[0]!.length, 76);
  const words = encodeWords('Präsentation für das Meeting über den Jahresabschluss 2024 – bitte lesen', 'utf-8', 'B');
  t.ok(words.split(' ').every((w) => w.length <= 75));
  const parsed = await simpleParser(`Subject: ${words}\r\n\r\n`);
  t.equal(parsed.subject, 'Präsentation für das Meeting über den Jahresabschluss 2024 – bitte lesen');
});
