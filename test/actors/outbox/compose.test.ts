/**
 * compose on its own thread, no SMTP: a reply and a forward of an original
 * read by the in-tree MIME parser (parseOriginal), their MIME read back with
 * mailparser. HTML-only originals are quoted as text; a long References
 * chain keeps its newest 20; the forward's header block names the sender as
 * a header would; the images the original's HTML shows stay behind; an
 * unreadable original is refused as invalid input.
 */
import { createHash, randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { compose, parseOriginal } from '../../../actors/outbox/compose.ts';
import { AppError } from '../../../runtime/errors.ts';

const pdf = randomBytes(5000);
const logo = randomBytes(200);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const chain = Array.from({ length: 25 }, (_, i) => `<chain-${i}@example.net>`);
const now = new Date('2026-11-17T10:00:00Z');

const original = Buffer.from(
  [
    'From: "Original, Quentin" <quentin@example.net>',
    'Reply-To: desk@example.net',
    'To: ann@example.org, ursula@example.com',
    'Subject: =?utf-8?q?Budget_=E2=80=93_winter?=',
    'Message-ID: <own@example.net>',
    `References: ${chain.join('\r\n ')}`,
    'Date: Mon, 16 Nov 2026 09:30:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="mixed"',
    '',
    '--mixed',
    'Content-Type: multipart/related; boundary="related"',
    '',
    '--related',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Please review the <b>budget</b> before Friday.</p><img src="cid:logo@x">',
    '--related',
    'Content-Type: image/png',
    'Content-ID: <logo@x>',
    'Content-Transfer-Encoding: base64',
    '',
    logo.toString('base64'),
    '--related--',
    '--mixed',
    'Content-Type: application/pdf; name="budget.pdf"',
    'Content-Disposition: attachment; filename="budget.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    pdf.toString('base64').replace(/(.{76})/g, '$1\r\n'),
    '--mixed--',
    '',
  ].join('\r\n'),
);

t.test('a reply: audience, subject, threading headers, and a quote of the HTML as text', async (t) => {
  const read = await parseOriginal(7, original);
  const composed = await compose(
    'ann@example.org',
    { kind: 'reply', original: 7, audience: 'senderOnly', cc: [], plainTextBody: 'Looks fine.', htmlBody: null },
    read,
    now,
  );
  t.same(composed.recipients, [{ address: 'desk@example.net', header: 'to' }], 'Reply-To, not From');
  t.same(composed.answering, { storedMessageId: 7, answering: 'senderOnly' });
  const reply = await simpleParser(Buffer.from(composed.raw));
  t.equal(reply.subject, 'Re: Budget – winter');
  t.equal(reply.inReplyTo, '<own@example.net>');
  t.same(reply.references, [...chain.slice(-19), '<own@example.net>'], 'the newest 20 ids, the original last');
  t.match(reply.text, /^Looks fine\.\n\nOn Mon, 16 Nov 2026 09:30:00 GMT, quentin@example\.net wrote:\n> Please review the budget before Friday\./);
});

t.test('a forward: the header block, and the attachments but the image the HTML shows', async (t) => {
  const composed = await compose(
    'ann@example.org',
    { kind: 'forward', original: 7, to: ['target@example.org'], cc: [], bcc: [], plainTextBody: 'FYI.', htmlBody: null },
    await parseOriginal(7, original),
    now,
  );
  const forwarded = await simpleParser(Buffer.from(composed.raw));
  t.equal(forwarded.subject, 'Fwd: Budget – winter');
  t.match(
    forwarded.text,
    'From: "Original, Quentin" <quentin@example.net>\nDate: Mon, 16 Nov 2026 09:30:00 GMT\nSubject: Budget – winter\nTo: ann@example.org, ursula@example.com',
  );
  t.same(
    forwarded.attachments.map((a) => [a.filename, a.contentType, sha(a.content)]),
    [['budget.pdf', 'application/pdf', sha(pdf)]],
  );
});

t.test('an original the parser cannot read is refused as invalid input', async (t) => {
  const err = await parseOriginal(7, new Uint8Array(0)).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof AppError && err.code === 'E_TOOL_INVALID_INPUT', 'E_TOOL_INVALID_INPUT');
});
