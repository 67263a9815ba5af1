/** parseMessage on chosen real and torture mails, and on small hand-made ones whose every byte is known. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import type { ParsedMessage } from '../../../actors/mime-parse/protocol.ts';
import { corpusAvailable, corpusDir } from '../../harness/corpus.ts';

function parsed(raw: Uint8Array | string): ParsedMessage {
  const reply = parseMessage(typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw, 'acct-1');
  if (!reply.ok) throw new Error('unreadable');
  return reply.message;
}

const file = (rel: string): ParsedMessage => parsed(readFileSync(join(corpusDir(), rel)));
const crlf = (...lines: string[]): string => lines.join('\r\n');

t.test('hand-made: headers decoded and normalised', async (t) => {
  const m = parsed(
    crlf(
      'From: =?iso-8859-1?Q?Ren=E9_Dupont?= <Rene@Example.COM>',
      'To: "Doe, Jane" <jane@example.org>, team: a@example.net, "B" <b@example.net>;',
      'Cc: undisclosed-recipients:;',
      'Subject: =?utf-8?B?w4lsw6h2ZQ==?= =?utf-8?Q?_caf=C3=A9?=',
      'Date: Tue, 1 Jul 2003 10:52:37 +0200 (CEST)',
      'Message-ID: <abc@example.com>',
      "In-Reply-To: <parent@example.com> (Jane's message)",
      'References: <root@example.com>',
      '  <parent@example.com>',
      '',
      'Hello.',
    ),
  );
  t.equal(m.subject, 'Élève café');
  t.same(m.from, [{ name: 'René Dupont', address: 'Rene@example.com' }]);
  t.same(
    m.to.map((a) => a.address),
    ['jane@example.org', 'a@example.net', 'b@example.net'],
    'group members are flattened',
  );
  t.equal(m.to[0]!.name, 'Doe, Jane');
  t.same(m.cc, [], 'an empty group is no address');
  t.equal(m.sentAt, Date.UTC(2003, 6, 1, 8, 52, 37));
  t.equal(m.messageId, '<abc@example.com>');
  t.equal(m.inReplyTo, '<parent@example.com>');
  t.same(m.references, ['<root@example.com>', '<parent@example.com>']);
  t.equal(m.bodyText, 'Hello.');
  t.equal(m.parseVersion, 1);
});

t.test('hand-made: quoted-printable, base64, HTML alternative, attachment never decoded', async (t) => {
  const pdf = Buffer.alloc(3000, 7)
    .toString('base64')
    .replace(/(.{76})/g, '$1\r\n');
  const m = parsed(
    crlf(
      'From: a@example.com',
      'Subject: parts',
      'Content-Type: multipart/mixed; boundary="outer"',
      '',
      'preamble',
      '--outer',
      'Content-Type: multipart/alternative; boundary=inner',
      '',
      '--inner',
      'Content-Type: text/plain; charset=iso-8859-1',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'Caf=E9 cr=E8me, a long line that was =',
      'softly broken.',
      '--inner',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('<p>HTML version</p>').toString('base64'),
      '--inner--',
      '--outer',
      'Content-Type: application/pdf; name="=?utf-8?Q?r=C3=A9sum=C3=A9.pdf?="',
      'Content-Transfer-Encoding: base64',
      "Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20final.pdf",
      '',
      pdf,
      '--outer--',
      'epilogue',
    ),
  );
  t.equal(m.bodyText, 'Café crème, a long line that was softly broken.', 'the plain alternative wins');
  t.equal(m.attachments.length, 1);
  const [a] = m.attachments;
  t.equal(a!.filename, 'résumé final.pdf', 'RFC 2231 filename, preferred over name');
  t.equal(a!.contentType, 'application/pdf');
  t.ok(Math.abs(a!.size - 3000) <= 3, `size estimated from the encoded length (${a!.size})`);
  t.equal(a!.inline, false);
  t.match(a!.sha256, /^[0-9a-f]{64}$/);
});

t.test('hand-made: HTML only is reduced to text; an empty plain alternative gives way', async (t) => {
  const m = parsed(
    crlf(
      'From: a@example.com',
      'Content-Type: multipart/alternative; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      '   ',
      '--b',
      'Content-Type: text/html',
      '',
      '<html><head><title>T</title><style>p{}</style></head><body><p>Hi&nbsp;<a href="https://x.example/">there</a> &amp; you</p><script>alert(1)</script><div>Line 2</div></body></html>',
      '--b--',
    ),
  );
  t.equal(m.bodyText, 'Hi there & you\n\nLine 2');
});

t.test('hand-made: header-only, CR-only and broken inputs still parse', async (t) => {
  t.equal(parsed('Subject: only headers').bodyText, '');
  const cr = parsed('From: a@example.com\rSubject: old Mac\r\rBody line\rSecond\r');
  t.equal(cr.subject, 'old Mac');
  t.equal(cr.bodyText, 'Body line\nSecond');
  const noBoundary = parsed(crlf('Subject: x', 'Content-Type: multipart/mixed', '', 'text of a multipart without boundary'));
  t.equal(noBoundary.bodyText, 'text of a multipart without boundary');
  const noClose = parsed(crlf('Subject: x', 'Content-Type: multipart/mixed; boundary=z', '', '--z', 'Content-Type: text/plain', '', 'unterminated part'));
  t.equal(noClose.bodyText, 'unterminated part', 'a missing close delimiter ends the part at the end');
  const badDate = parsed(crlf('Subject: x', 'Date: Whenever', '', 'b'));
  t.equal(badDate.sentAt, null);
});

t.test('hand-made: the header block ends at its first empty line, CRLF or bare LF, whichever comes first', async (t) => {
  // CRLF mail whose body holds bare LF pairs later: the CRLF blank line ends the block.
  const crlfFirst = parsed('Subject: crlf\r\nX-A: 1\r\n\r\nFirst\n\nX-Not: a field\r\n\r\nlast');
  t.equal(crlfFirst.subject, 'crlf');
  t.equal(crlfFirst.bodyText, 'First\n\nX-Not: a field\n\nlast');
  // A bare LF blank line before a later CRLF one ends the block there.
  const lfFirst = parsed('Subject: lf\nX-A: 1\n\nBody\r\nTo: not@example.com\r\n\r\nmore');
  t.equal(lfFirst.subject, 'lf');
  t.same(lfFirst.to, [], 'a line after the LF blank line is body, not a field');
  t.equal(lfFirst.bodyText, 'Body\nTo: not@example.com\n\nmore');
  // The two forms meeting: LF LF right before CR LF.
  const met = parsed('Subject: met\r\nX-A: 1\n\n\r\nbody');
  t.equal(met.subject, 'met');
  t.equal(met.bodyText, 'body');
  // In a part's header too: the part's CRLF blank line ends its block, though its body holds LF LF.
  const part = parsed(crlf('Subject: p', 'Content-Type: multipart/mixed; boundary=z', '', '--z', 'Content-Type: text/plain', '', 'one\n\ntwo', '--z--', ''));
  t.equal(part.bodyText, 'one\n\ntwo');
});

t.test('corpus files', { skip: !corpusAvailable() && 'the shared corpus is not present' }, async (t) => {
  t.test('ISO-2022-JP subject, names and body', async (t) => {
    const m = file('mime-torture/ruby-mail/multi_charset__japanese_iso_2022.eml');
    t.equal(m.subject, 'まみむめも');
    t.same(m.to, [{ name: 'みける', address: 'raasdnil@gmail.com' }]);
    t.equal(m.bodyText, 'すみません。');
    const spam = file('real/spamassassin/spam/00327.7f21bc8575786a0e00341a6407b9f286.eml');
    t.equal(spam.subject, '未承諾広告※灼熱！出会いの広場');
    t.match(spam.bodyText, /突然のメール失礼いたします。/);
  });
  t.test('encoded-word subject and a raw 8-bit one', async (t) => {
    t.equal(file('real/spamassassin/hard_ham/00149.f6fddcb1750a61e5e085e22a4fa08912.eml').subject, 'Matrox Parhelia™ now available');
    t.equal(file('real/spamassassin/easy_ham/02026.e6e094c6110cbff0c3a55e0fc5c9273a.eml').subject, 'Gambler wins £7,000 - and spends it all on horse shiat');
  });
  t.test('base64 UTF-8 text body', async (t) => {
    const m = file('real/bounces/sisimai/lhost-mfilter-04.eml');
    t.match(m.bodyText, /^このメールは「m-FILTER」が自動的に生成して送信しています。/);
    t.match(m.bodyText, /550 5\.4\.1 All recipient addresses rejected/);
  });
  t.test('quoted-printable ISO-8859-1 body', async (t) => {
    const m = file('mime-torture/enmime/mail__qp-utf8-header-recursed.eml');
    t.equal(m.subject, 'MIME UTF8 Test ¢ More Text');
    t.match(m.bodyText, /^Lorem ipsum dolor sit amet/);
  });
  t.test('HTML-only mail with an inline image', async (t) => {
    const m = file('mime-torture/enmime/low-quality__html-only-inline.eml');
    t.equal(m.bodyText, 'Test of HTML section');
    t.same(
      m.attachments.map((a) => [a.filename, a.contentType, a.inline]),
      [['favicon.png', 'image/png', true]],
    );
  });
  t.test('attachment names: encoded words, RFC 2231, raw UTF-8, a missing semicolon', async (t) => {
    t.same(
      file('mime-torture/mime-tools/russian.eml').attachments.map((a) => a.filename),
      ['Список.doc'],
    );
    t.same(
      file('mime-torture/ruby-mail/multi_charset__japanese_attachment_long_name.eml').attachments.map((a) => a.filename),
      ['かきくけこかきくけこかきくけこかきくけこかきくけこ.txt'],
    );
    t.match(file('mime-torture/flanker/russian-attachment-yahoo.eml').attachments[0]!.filename, /^Картинка с очень, очень длинным/);
    const hotel = file('mime-torture/enmime/mail__mime-bad-content-type.eml');
    t.same(
      hotel.attachments.map((a) => [a.filename, a.contentType]),
      [['Invoice_302232133150612.pdf', 'application/pdf']],
    );
    t.ok(Math.abs(hotel.attachments[0]!.size - 524) <= 3, 'size skips the blank lines before the base64');
    t.match(hotel.bodyText, /Thank you for booking with easyHotel/);
  });
  t.test('broken structure, readable headers', async (t) => {
    const finalBoundary = file('mime-torture/enmime/low-quality__bad-final-boundary.eml');
    t.equal(finalBoundary.bodyText, 'A text section');
    t.same(
      finalBoundary.attachments.map((a) => a.filename),
      ['foo_9E5D72.zip'],
    );
    const wrapped = file('mime-torture/enmime/low-quality__bad-header-wrap.eml');
    t.same(
      wrapped.attachments.map((a) => a.filename),
      ['7DDA4_foo_9E5D72.zip'],
      'a parameter wrapped without indentation',
    );
    const headerStart = file('mime-torture/enmime/low-quality__bad-header-start.eml');
    t.same(
      headerStart.from.map((a) => a.address),
      ['james@makita.skynet'],
      'a first header line indented',
    );
    t.equal(file('mime-torture/enmime/mail__multipart-wo-boundary.eml').bodyText, "I'm  multipart message without boundary");
    t.equal(file('mime-torture/flanker/missing-final-boundary.eml').bodyText, 'Some body');
    t.equal(file('mime-torture/horde-mime/deeply_nested.eml').bodyText, 'Test', 'a hundred nested multiparts');
  });
  t.test('missing content type, header only, no body separator', async (t) => {
    t.equal(file('mime-torture/enmime/low-quality__missing-content-type.eml').bodyText, 'A plain text email');
    const headerOnly = file('mime-torture/enmime/mail__header-only.eml');
    t.equal(headerOnly.subject, 'Attachment');
    t.equal(headerOnly.bodyText, '');
    t.same(headerOnly.attachments, []);
    t.equal(
      file('mime-torture/php-mime-mail-parser/issue84.eml').subject,
      'Re: [PHP-DEV] [RFC] Remove PHP 4 Constructors',
      'unindented folding in the header block',
    );
  });
  t.test('CR-only line endings and a leading blank line', async (t) => {
    t.equal(file('mime-torture/sisimai-line-endings/mac__lhost-postfix-01.eml').subject, 'Undelivered Mail Returned to Sender');
    t.equal(file('mime-torture/flanker/iphone.eml').from.length, 1);
  });
  t.test('bounces: report parts are attachments, the returned message adds its text', async (t) => {
    const m = file('mime-torture/flanker/bounce__office365.eml');
    t.same(
      m.attachments.map((a) => a.contentType),
      ['message/delivery-status', 'message/rfc822'],
    );
    t.ok(m.bodyText.length > 0);
  });
});

t.test('unreadable says why; a parser that throws is reported by error class only, never its text', async (t) => {
  t.same(parseMessage(new Uint8Array(0), 'acct-1'), { ok: false, unreadable: true, reason: 'empty' });
  t.same(parseMessage(Buffer.from('no header here, only words\r\n'), 'acct-1'), { ok: false, unreadable: true, reason: 'no-header' });
  // Not a real Uint8Array: every typed-array accessor the parser touches throws a TypeError, the way a
  // parser defect would. This injects the failure; no well-formed or hostile MIME input is known to throw.
  const broken = new Proxy(Buffer.from('Subject: secret plans\r\n\r\nbody\r\n'), {}) as unknown as Uint8Array;
  const reply = parseMessage(broken, 'acct-1');
  t.same(reply, { ok: false, unreadable: true, reason: 'parser-failed', errorClass: 'TypeError' });
  t.notMatch(JSON.stringify(reply), /secret/);
});
