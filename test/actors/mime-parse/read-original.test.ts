/**
 * readOriginal: what a reply or forward reads of a stored message. Its
 * properties are the parse's; its attachments are the listing's, decoded
 * byte for byte, less the images the HTML shows (a Content-ID inside a
 * multipart/related, as mailparser's `related`), while a file sent
 * `Content-Disposition: inline` in a multipart/mixed is still carried.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { readOriginal } from '../../../actors/mime-parse/read-original.ts';

const pdf = randomBytes(4000);
const photo = randomBytes(1500);
const logo = randomBytes(300);
const csv = Buffer.from('name;amount\r\nQuentin;12,50 €\r\n', 'utf8');
const b64 = (buf: Buffer): string => buf.toString('base64').replace(/(.{76})/g, '$1\r\n');

function message(): Buffer {
  return Buffer.from(
    [
      'From: =?utf-8?q?Qu=C3=A9ntin_Original?= <quentin@Example.NET>',
      'Reply-To: desk@example.net',
      'To: Ann <ann@example.org>, Team: ursula@example.com, victor@example.com;',
      'Cc: "Watcher, V." <watch@example.com>',
      'Subject: =?utf-8?b?QnVkZ2V0IOKAkyB3aW50ZXI=?=',
      'Message-ID: <three@example.net>',
      'References: <one@example.net>\r\n <two@example.net>',
      'Date: Mon, 16 Nov 2026 09:30:00 +0100',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="mixed"',
      '',
      '--mixed',
      'Content-Type: multipart/related; boundary="related"',
      '',
      '--related',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Please review the <b>budget</b>.</p><img src="cid:logo@x">',
      '--related',
      'Content-Type: image/png',
      'Content-ID: <logo@x>',
      'Content-Transfer-Encoding: base64',
      '',
      b64(logo),
      '--related--',
      '--mixed',
      'Content-Type: image/jpeg; name="photo.jpg"',
      'Content-Disposition: inline; filename="photo.jpg"',
      'Content-ID: <photo@x>',
      'Content-Transfer-Encoding: base64',
      '',
      b64(photo),
      '--mixed',
      'Content-Type: application/pdf; name="budget.pdf"',
      'Content-Disposition: attachment; filename="budget.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      b64(pdf),
      '--mixed',
      'Content-Type: text/csv; charset=utf-8; name="sums.csv"',
      'Content-Disposition: attachment; filename="sums.csv"',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'name;amount=0D=0AQuentin;12,50 =E2=82=AC=0D=0A',
      '--mixed--',
      '',
    ].join('\r\n'),
  );
}

t.test('the properties are those of the parse', async (t) => {
  const raw = message();
  const read = readOriginal(raw)!;
  const parsed = parseMessage(raw, 'any');
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  for (const key of ['messageId', 'references', 'subject', 'from', 'replyTo', 'to', 'cc', 'sentAt', 'bodyText'] as const)
    t.same(read[key], parsed.message[key], key);
  t.equal(read.subject, 'Budget – winter');
  t.same(read.from, [{ name: 'Quéntin Original', address: 'quentin@example.net' }]);
  t.same(
    read.to.map((a) => a.address),
    ['ann@example.org', 'ursula@example.com', 'victor@example.com'],
    'groups flattened',
  );
  t.same(read.cc, [{ name: 'Watcher, V.', address: 'watch@example.com' }]);
  t.equal(read.messageId, '<three@example.net>');
  t.same(read.references, ['<one@example.net>', '<two@example.net>']);
  t.equal(read.sentAt, Date.UTC(2026, 10, 16, 8, 30));
  t.match(read.bodyText, /^Please review the budget\./, 'HTML-only mail reduced to text');
});

t.test('a forward carries every attachment but the images the HTML shows, byte for byte', async (t) => {
  const attachments = readOriginal(message())!.attachments();
  t.same(
    attachments.map((a) => [a.filename, a.contentType]),
    [
      ['photo.jpg', 'image/jpeg'],
      ['budget.pdf', 'application/pdf'],
      ['sums.csv', 'text/csv'],
    ],
    'the related logo is left out; the inline photo in multipart/mixed is carried',
  );
  t.ok(attachments[0]!.content.equals(photo), 'base64 photo');
  t.ok(attachments[1]!.content.equals(pdf), 'base64 pdf');
  t.ok(attachments[2]!.content.equals(csv), 'quoted-printable csv');
});

t.test('an unreadable message reads as null', async (t) => {
  t.equal(readOriginal(new Uint8Array(0)), null, 'empty');
  t.equal(readOriginal(Buffer.from('\r\n\r\njust a body, no header\r\n')), null, 'no header field');
});
