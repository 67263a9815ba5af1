/**
 * The mime-parse pool task answers through createPool with the raw bytes
 * moved, not copied (both ways for an extracted attachment); and nothing it
 * writes, in any thread, carries content.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { extractAttachment } from '../../../actors/mime-parse/attachment-content.ts';
import { ExtractAttachmentReply, ExtractAttachmentRequest, MAX_ATTACHMENT_INDEX, ParseReply } from '../../../actors/mime-parse/protocol.ts';
import { answerExtract } from '../../../actors/mime-parse/task.ts';
import { isWithTransfer, TRANSFER } from '../../../runtime/actor.ts';
import { AppError } from '../../../runtime/errors.ts';
import { createPool } from '../../../runtime/pool/pool.ts';

const entry = new URL('../../../actors/mime-parse/task.ts', import.meta.url);

t.test('the pool parses a moved buffer and answers ParseReply', async (t) => {
  const pool = createPool({ id: 'mime-parse', entry, minThreads: 1, maxThreads: 2 });
  t.teardown(() => pool.close());
  const raw = new Uint8Array(Buffer.from('From: Ann <ann@example.com>\r\nSubject: Pool\r\nMessage-ID: <p@x>\r\n\r\nHello from a pool.\r\n'));
  const reply = await pool.ask({ type: 'mime-parse.parse', account: 'acct-1', raw }, { transfer: [raw.buffer], reply: ParseReply });
  t.equal(raw.byteLength, 0, 'the raw message was moved to the pool thread');
  t.ok(reply.ok);
  if (reply.ok) {
    t.equal(reply.message.subject, 'Pool');
    t.equal(reply.message.bodyText, 'Hello from a pool.');
    t.same(reply.message.from, [{ name: 'Ann', address: 'ann@example.com' }]);
  }
  const junk = new Uint8Array(16);
  t.same(await pool.ask({ type: 'mime-parse.parse', account: 'acct-1', raw: junk }, { transfer: [junk.buffer], reply: ParseReply }), {
    ok: false,
    unreadable: true,
    reason: 'no-header',
  });
  const refused = await pool.ask({ type: 'mime-parse.parse', raw: new Uint8Array(1) }).catch((err: unknown) => err);
  t.ok(refused instanceof AppError && refused.code === 'E_PROTOCOL_INVALID', 'a request without account is refused');
});

const report = Buffer.from('%PDF-1.4 quarterly numbers\n');

function withAttachment(): Uint8Array<ArrayBuffer> {
  return new Uint8Array(
    Buffer.from(
      [
        'From: Ann <ann@example.com>',
        'Subject: Report',
        'Content-Type: multipart/mixed; boundary="b"',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'See attached.',
        '--b',
        'Content-Type: application/pdf; name="report.pdf"',
        'Content-Disposition: attachment; filename="report.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        report.toString('base64'),
        '--b--',
        '',
      ].join('\r\n'),
    ),
  );
}

t.test('the pool extracts one attachment of a moved message and moves its bytes back', async (t) => {
  const pool = createPool({ id: 'mime-parse', entry, minThreads: 1, maxThreads: 1 });
  t.teardown(() => pool.close());
  const raw = withAttachment();
  const expected = extractAttachment(raw, 0)!;
  const reply = await pool.ask({ type: 'mime-parse.extract-attachment', raw, index: 0 }, { transfer: [raw.buffer], reply: ExtractAttachmentReply });
  t.equal(raw.byteLength, 0, 'the raw message was moved to the pool thread');
  t.match(reply, { filename: 'report.pdf', contentType: 'application/pdf', encodedSha256: expected.encodedSha256 });
  t.ok(reply && Buffer.from(reply.content).equals(report), 'the decoded bytes');
  t.equal(reply?.content.byteLength, reply?.content.buffer.byteLength, 'in a buffer of their own');

  const past = withAttachment();
  t.equal(await pool.ask({ type: 'mime-parse.extract-attachment', raw: past, index: 1 }, { transfer: [past.buffer], reply: ExtractAttachmentReply }), null);
  t.equal(
    await pool.ask({ type: 'mime-parse.extract-attachment', raw: new Uint8Array(16), index: 0 }, { reply: ExtractAttachmentReply }),
    null,
    'a message the parser calls unreadable',
  );
  for (const index of [-1, MAX_ATTACHMENT_INDEX + 1, 0.5]) {
    const refused = await pool.ask({ type: 'mime-parse.extract-attachment', raw: new Uint8Array(1), index }).catch((err: unknown) => err);
    t.ok(refused instanceof AppError && refused.code === 'E_PROTOCOL_INVALID', `index ${index} is refused`);
  }
});

t.test('the extract handler marks the decoded bytes for transfer', async (t) => {
  const answer = answerExtract(ExtractAttachmentRequest.parse({ type: 'mime-parse.extract-attachment', raw: withAttachment(), index: 0 }));
  t.ok(isWithTransfer(answer));
  if (!isWithTransfer(answer)) return;
  const reply = ExtractAttachmentReply.parse(answer.value);
  t.same(answer[TRANSFER], [reply!.content.buffer]);
  t.equal(answerExtract({ type: 'mime-parse.extract-attachment', raw: withAttachment(), index: 3 }), null);
  t.notOk(ExtractAttachmentRequest.safeParse({ type: 'mime-parse.extract-attachment', raw: 'text', index: 0 }).success, 'raw must be bytes');
  t.notOk(ExtractAttachmentReply.safeParse({ ...reply, extra: 1 }).success);
});

t.test('nothing about the content reaches the output of any thread', async (t) => {
  const marker = `privacy${Date.now().toString(36)}marker`;
  const child = fileURLToPath(new URL('./privacy-child.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../../../', import.meta.url));
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, marker], { cwd, timeout: 60_000 });
  const output = stdout + stderr;
  t.match(output, /protocol\.invalid/, 'the refused request was logged, so logs were captured');
  t.notMatch(output, marker, 'no subject, address, body, file name or boundary was written');
});
