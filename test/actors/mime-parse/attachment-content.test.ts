/**
 * extractAttachment: the index-th entry of exactly the list parseMessage
 * gives, decoded. A hand-built message whose attachment bytes are known, and
 * every attachment of the shared corpus (real and torture) checked against
 * its listing and against what its encoding makes checkable.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { extractAttachment } from '../../../actors/mime-parse/attachment-content.ts';
import { attachmentParts } from '../../../actors/mime-parse/attachments.ts';
import { readMimeTree } from '../../../actors/mime-parse/mime-tree.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import type { Attachment } from '../../../actors/mime-parse/protocol.ts';
import { corpusAvailable, loadCorpus } from '../../harness/corpus.ts';

const pdf = randomBytes(3000);
const image = randomBytes(257);
const qpBytes = Buffer.from('Prix: 10 € = dix euros\r\nLigne deux, très longue '.repeat(3), 'utf8');
const enclosed = 'From: inner@example.org\r\nSubject: Inner\r\n\r\nThe enclosed body.\r\n';

function wrap64(buf: Buffer, width = 76): string {
  return buf.toString('base64').replace(new RegExp(`(.{${width}})`, 'g'), '$1\r\n');
}

/** Soft-broken quoted-printable of arbitrary bytes. */
function qp(buf: Buffer): string {
  let out = '';
  let line = '';
  for (const byte of buf) {
    const c = byte >= 33 && byte <= 126 && byte !== 61 ? String.fromCharCode(byte) : `=${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (line.length + c.length > 72) {
      out += `${line}=\r\n`;
      line = '';
    }
    line += c;
  }
  return out + line;
}

function handBuilt(eol: '\r\n' | '\n'): Buffer {
  const text = [
    'From: sender@example.org',
    'To: alice@example.org',
    'Subject: Attachments',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="outer"',
    '',
    '--outer',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'The body.',
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>The body.</p>',
    '--alt--',
    '--outer',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    wrap64(pdf),
    '--outer',
    'Content-Type: image/png',
    'Content-ID: <logo@example.org>',
    'Content-Transfer-Encoding: base64',
    '',
    wrap64(image, 60),
    '--outer',
    'Content-Type: text/plain; charset=utf-8',
    "Content-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt",
    'Content-Transfer-Encoding: quoted-printable',
    '',
    qp(qpBytes),
    '--outer',
    'Content-Type: text/csv; name="plain.csv"',
    'Content-Disposition: attachment',
    '',
    'a,b\r\n1,2',
    '--outer',
    'Content-Type: message/rfc822',
    '',
    enclosed.replace(/\r\n$/, ''),
    '--outer--',
    '',
  ].join('\r\n');
  return Buffer.from(eol === '\r\n' ? text : text.replace(/\r\n/g, '\n'), 'utf8');
}

function listed(raw: Buffer): Attachment[] {
  const reply = parseMessage(raw, 'test');
  if (!reply.ok) throw new Error('the message did not parse');
  return reply.message.attachments;
}

for (const eol of ['\r\n', '\n'] as const) {
  t.test(`a hand-built message (${eol === '\r\n' ? 'CRLF' : 'LF'}) gives back the bytes put in, in listing order`, async (t) => {
    const raw = handBuilt(eol);
    const list = listed(raw);
    t.same(
      list.map((a) => [a.filename, a.contentType, a.inline]),
      [
        ['report.pdf', 'application/pdf', false],
        [null, 'image/png', true],
        ['résumé.txt', 'text/plain', false],
        ['plain.csv', 'text/csv', false],
        [null, 'message/rfc822', false],
      ],
    );
    const got = list.map((_, index) => extractAttachment(raw, index));
    for (const [index, entry] of got.entries()) {
      t.ok(entry, `attachment ${index} is extracted`);
      t.equal(entry!.filename, list[index]!.filename);
      t.equal(entry!.contentType, list[index]!.contentType);
      t.equal(entry!.encodedSha256, list[index]!.sha256, `attachment ${index} is the listed part`);
      t.equal(entry!.content.byteOffset, 0);
      t.equal(entry!.content.byteLength, entry!.content.buffer.byteLength, 'the bytes own their buffer (transferable)');
    }
    t.ok(got[0]!.content.equals(pdf), 'base64 decoded');
    t.ok(got[1]!.content.equals(image), 'base64 with other line lengths decoded');
    // Every byte outside printable ASCII is escaped (line ends as =0D=0A), so the message's own line ends are soft breaks only.
    t.ok(got[2]!.content.equals(qpBytes), 'quoted-printable decoded');
    t.equal(got[3]!.content.toString('utf8'), eol === '\r\n' ? 'a,b\r\n1,2' : 'a,b\n1,2', 'an identity part as stored');
    t.equal(
      got[4]!.content.toString('utf8'),
      eol === '\r\n' ? enclosed.replace(/\r\n$/, '') : enclosed.replace(/\r\n$/, '').replace(/\r\n/g, '\n'),
      'an enclosed message whole',
    );
    t.equal(extractAttachment(raw, list.length), null, 'one past the end');
  });
}

t.test('an index that is not a position in the list, and an unreadable message, give null', async (t) => {
  const raw = handBuilt('\r\n');
  for (const index of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 5, 1_000_000]) t.equal(extractAttachment(raw, index), null, `index ${index}`);
  t.equal(extractAttachment(new Uint8Array(0), 0), null, 'empty');
  t.equal(extractAttachment(Buffer.from('\r\n\r\nno header at all\r\n'), 0), null, 'no header field');
  t.equal(extractAttachment(Buffer.from('Subject: plain\r\n\r\nJust text.\r\n'), 0), null, 'no attachment');
});

t.test('a single-part message that is itself an attachment', async (t) => {
  const bytes = randomBytes(100);
  const raw = Buffer.from(`Subject: scan\r\nContent-Type: image/jpeg\r\nContent-Transfer-Encoding: base64\r\n\r\n${wrap64(bytes)}\r\n`);
  t.equal(listed(raw).length, 1);
  t.ok(extractAttachment(raw, 0)!.content.equals(bytes));
});

t.test('base64 padded mid-stream (separately encoded chunks) keeps every chunk', async (t) => {
  const a = Buffer.from('first chunk, padded');
  const b = Buffer.from('second');
  const raw = Buffer.from(
    `Subject: chunks\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n${a.toString('base64')}\r\n${b.toString('base64')}\r\n--b--\r\n`,
  );
  t.ok(a.toString('base64').endsWith('='), 'the first chunk is padded');
  t.equal(extractAttachment(raw, 0)!.content.toString(), 'first chunk, paddedsecond');
});

t.test('the message bytes are neither changed nor aliased', async (t) => {
  const raw = handBuilt('\r\n');
  const copy = Buffer.from(raw);
  const entry = extractAttachment(raw, 3)!;
  entry.content.fill(0);
  t.ok(raw.equals(copy));
});

t.test('every listed attachment of the corpus extracts, decoded plausibly', { skip: !corpusAvailable() && 'the shared corpus is not present' }, async (t) => {
  let total = 0;
  let canonicalBase64 = 0;
  let identity = 0;
  const failures: string[] = [];
  for (const kind of ['real', 'mime-torture'] as const) {
    for (const message of loadCorpus(kind)) {
      const reply = parseMessage(message.raw, 'corpus');
      if (!reply.ok) {
        if (extractAttachment(message.raw, 0) !== null) failures.push(`${message.name}: unreadable, yet an attachment came out`);
        continue;
      }
      const list = reply.message.attachments;
      const tree = readMimeTree(message.raw);
      const parts = attachmentParts(tree.root);
      if (parts.length !== list.length) failures.push(`${message.name}: ${parts.length} parts for ${list.length} listed`);
      for (const [index, attachment] of list.entries()) {
        total += 1;
        const where = `${message.name} #${index}`;
        const got = extractAttachment(message.raw, index);
        if (got === null) {
          failures.push(`${where}: null`);
          continue;
        }
        if (got.encodedSha256 !== attachment.sha256 || got.filename !== attachment.filename || got.contentType !== attachment.contentType) {
          failures.push(`${where}: not the listed part`);
        }
        const part = parts[index]!;
        const encoded = tree.buf.subarray(part.bodyStart, Math.max(part.bodyStart, part.bodyEnd));
        if (part.encoding === 'base64') {
          const letters = encoded.toString('latin1').replace(/[^A-Za-z0-9+/]/g, '').length;
          if (got.content.length > Math.ceil((letters * 3) / 4)) failures.push(`${where}: more bytes than the base64 holds`);
          const compact = encoded.toString('latin1').replace(/\s/g, '');
          if (/^[A-Za-z0-9+/]*={0,2}$/.test(compact) && compact.length % 4 === 0 && compact.length > 0) {
            canonicalBase64 += 1;
            const pad = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
            if (got.content.length !== (compact.length / 4) * 3 - pad)
              failures.push(`${where}: ${got.content.length} bytes from ${compact.length} base64 characters`);
            // Re-encoding gives the text back, except the last group, whose spare bits a sloppy encoder may have set.
            if (got.content.toString('base64').slice(0, -4) !== compact.slice(0, -4)) failures.push(`${where}: does not re-encode to its text`);
            if (Math.abs(got.content.length - attachment.size) > 3) failures.push(`${where}: ${got.content.length} bytes, listed as about ${attachment.size}`);
          }
        } else if (part.encoding === 'quoted-printable') {
          if (got.content.length > encoded.length || got.content.length < attachment.size - encoded.length / 3)
            failures.push(`${where}: implausible quoted-printable size`);
        } else {
          identity += 1;
          if (!got.content.equals(encoded)) failures.push(`${where}: an identity part changed`);
          if (got.content.length !== attachment.size) failures.push(`${where}: ${got.content.length} bytes, listed as ${attachment.size}`);
        }
      }
      if (extractAttachment(message.raw, list.length) !== null) failures.push(`${message.name}: an attachment past the list`);
    }
  }
  t.same(failures, []);
  t.ok(total > 1_000, `${total} attachments`);
  t.ok(canonicalBase64 > 150, `${canonicalBase64} canonical base64 attachments`);
  t.ok(identity > 500, `${identity} identity-encoded attachments`);
});
