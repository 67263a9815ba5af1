/**
 * readAttachmentSource against a real migrated database: the stored message
 * is read afresh, so tombstoning, damage, another account or an index the
 * stored list does not hold all answer null; a stored message gives its raw
 * MIME and the SHA-256 listed at the index. The whole redemption
 * (http/attachments/redeem.ts) runs here too, over the two pool handlers
 * called in this thread, for what only the decoded part decides: a changed
 * listing, a message not derived yet. (Through real pools:
 * test/http/attachments/redeem.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { AttachmentSourceReply, AttachmentSourceRequest } from '../../../actors/mail-query/protocol/attachment-source.ts';
import { answerAttachmentSource, readAttachmentSource } from '../../../actors/mail-query/attachment.ts';
import { extractAttachment } from '../../../actors/mime-parse/attachment-content.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { ExtractAttachmentRequest } from '../../../actors/mime-parse/protocol.ts';
import { answerExtract } from '../../../actors/mime-parse/task.ts';
import { type RedeemDeps, redeemAttachment } from '../../../http/attachments/redeem.ts';
import { isWithTransfer, TRANSFER } from '../../../runtime/actor.ts';
import { type Askable, parseReply, type Protocol } from '../../../runtime/ref.ts';
import { tombstone } from '../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch, type FetchedMessage } from '../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../runtime/store/open.ts';
import { run } from '../../../runtime/store/rows.ts';
import { aliceFolders, freshStore, idOf } from '../../runtime/store/mailbox/helpers.ts';

const pdf = randomBytes(2048);
const note = Buffer.from('hello, attachment\n');

function rawWithAttachments(): Buffer {
  return Buffer.from(
    [
      'From: sender@example.org',
      'Subject: two files',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'See attached.',
      '--b',
      'Content-Type: application/pdf; name="a.pdf"',
      'Content-Disposition: attachment; filename="a.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      pdf.toString('base64').replace(/(.{76})/g, '$1\r\n'),
      '--b',
      'Content-Type: text/plain; name="note.txt"',
      'Content-Disposition: attachment; filename="note.txt"',
      'Content-Transfer-Encoding: base64',
      '',
      note.toString('base64'),
      '--b--',
      '',
    ].join('\r\n'),
  );
}

function store(db: Database, bindingId: number, uid: number, raw: Buffer, derived = true): number {
  const reply = parseMessage(raw, 'alice');
  if (!reply.ok) throw new Error('unparseable fixture');
  const message: FetchedMessage = {
    uid,
    flags: [],
    keywords: [],
    modseq: null,
    internalDate: 1_700_000_000_000,
    size: raw.length,
    state: 'stored',
    raw,
    parsed: derived ? reply.message : null,
  };
  // Each test stores uid 1 first into a fresh binding: no checkpoint yet (null), then epoch 0.
  const result = storeBatch(db, {
    accountId: 'alice',
    bindingId,
    uidValidity: 1,
    expectedEpoch: uid === 1 ? null : 0,
    messages: [message],
    advanceTo: { lastUid: uid, highestModseq: null },
    now: 1,
  });
  if (!result.ok) throw new Error('store refused');
  return idOf(db, bindingId, uid);
}

/** A pool stand-in that runs a handler in this thread: the message and the reply pass the same schemas. */
function inThread<P extends Protocol>(id: string, handle: (msg: unknown) => unknown): Askable<P> {
  return {
    id,
    ask: async (msg, options = {}) => {
      const answer = handle(msg);
      return parseReply(isWithTransfer(answer) ? answer.value : answer, options.reply);
    },
  };
}

function redeem(db: Database, messageId: number, index: number) {
  const pools: RedeemDeps = {
    queryPool: inThread('mail-query', (msg) => answerAttachmentSource(db, AttachmentSourceRequest.parse(msg))),
    parsePool: inThread('mime-parse', (msg) => answerExtract(ExtractAttachmentRequest.parse(msg))),
  };
  return redeemAttachment(pools, { messageId, index }, ['alice'], 5_000);
}

t.test('a stored message gives its raw MIME and the SHA-256 listed at each index', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const raw = rawWithAttachments();
  const id = store(db, inbox.id, 1, raw);
  const first = readAttachmentSource(db, { messageId: id, index: 0, accounts: ['alice'] });
  t.ok(first?.raw.equals(raw), 'the stored raw MIME');
  t.equal(first?.listedSha256, extractAttachment(raw, 0)?.encodedSha256, 'the SHA-256 of the part listed at 0');
  const second = readAttachmentSource(db, { messageId: id, index: 1, accounts: ['bob', 'alice'] });
  t.equal(second?.listedSha256, extractAttachment(raw, 1)?.encodedSha256);
  t.not(first?.listedSha256, second?.listedSha256);
  t.equal(readAttachmentSource(db, { messageId: id, index: 2, accounts: ['alice'] }), null, 'past the stored list');

  const pdfDownload = await redeem(db, id, 0);
  t.match(pdfDownload, { filename: 'a.pdf', contentType: 'application/pdf' });
  t.ok(pdfDownload && Buffer.from(pdfDownload.content).equals(pdf), 'redeemed: the decoded bytes');
  const noteDownload = await redeem(db, id, 1);
  t.match(noteDownload, { filename: 'note.txt', contentType: 'text/plain' });
  t.ok(noteDownload && Buffer.from(noteDownload.content).equals(note));
  t.equal(await redeem(db, id, 2), null, 'past the list');
});

t.test('anything but a stored, intact message of a listed account is null', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const id = store(db, inbox.id, 1, rawWithAttachments());
  t.equal(readAttachmentSource(db, { messageId: id, index: 0, accounts: ['bob'] }), null, 'another account');
  t.equal(readAttachmentSource(db, { messageId: id, index: 0, accounts: [] }), null, 'no account');
  t.equal(readAttachmentSource(db, { messageId: id + 100, index: 0, accounts: ['alice'] }), null, 'no such message');
  t.equal(readAttachmentSource(db, { messageId: -1, index: 0, accounts: ['alice'] }), null, 'not an id');
  t.equal(readAttachmentSource(db, { messageId: id, index: -1, accounts: ['alice'] }), null, 'not an index');
  t.equal(readAttachmentSource(db, { messageId: id, index: 65_536, accounts: ['alice'] }), null, 'past any index');

  const damaged = store(db, inbox.id, 2, rawWithAttachments());
  const altered = rawWithAttachments();
  altered[altered.length - 10] = altered[altered.length - 10]! ^ 1;
  run(db.prepare('UPDATE message_raw SET mime = ? WHERE message_id = ?'), [altered, damaged]);
  t.equal(readAttachmentSource(db, { messageId: damaged, index: 0, accounts: ['alice'] }), null, 'raw MIME no longer matches its SHA-256');

  const gone = store(db, inbox.id, 3, rawWithAttachments());
  t.ok(readAttachmentSource(db, { messageId: gone, index: 0, accounts: ['alice'] }), 'served while stored');
  t.equal(tombstone(db, inbox.id, 1, [3], 'expunged', 2), 1);
  t.equal(readAttachmentSource(db, { messageId: gone, index: 0, accounts: ['alice'] }), null, 'the link dies with the message');
  t.equal(await redeem(db, gone, 0), null, 'and so does its redemption');
});

t.test('the stored listing decides what an index names', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const listed = store(db, inbox.id, 1, rawWithAttachments());
  // As if a later parser had listed the attachments in another order: index 0 now names the note.
  const json = JSON.parse(
    (db.prepare('SELECT attachments_json FROM messages WHERE id = ?').get([listed]) as { attachments_json: string }).attachments_json,
  ) as unknown[];
  run(db.prepare('UPDATE messages SET attachments_json = ? WHERE id = ?'), [JSON.stringify(json.reverse()), listed]);
  t.equal(
    readAttachmentSource(db, { messageId: listed, index: 0, accounts: ['alice'] })?.listedSha256,
    extractAttachment(rawWithAttachments(), 1)?.encodedSha256,
    'the source carries what the stored list names at 0',
  );
  t.equal(await redeem(db, listed, 0), null, 'never another attachment than the one listed');

  const underived = store(db, inbox.id, 2, rawWithAttachments(), false);
  t.equal(readAttachmentSource(db, { messageId: underived, index: 1, accounts: ['alice'] })?.listedSha256, null, 'not derived yet: nothing listed');
  const download = await redeem(db, underived, 1);
  t.ok(download && Buffer.from(download.content).equals(note), 'not derived yet: the parser decides');
});

t.test('the pool handler moves the raw bytes and its messages validate', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const id = store(db, inbox.id, 1, rawWithAttachments());
  const request = AttachmentSourceRequest.parse({ type: 'mail-query.attachment', messageId: id, index: 0, accounts: ['alice'] });
  const answer = answerAttachmentSource(db, request);
  t.ok(isWithTransfer(answer));
  if (!isWithTransfer(answer)) return;
  const reply = AttachmentSourceReply.parse(answer.value);
  t.ok(reply !== null && Buffer.from(reply.raw).equals(rawWithAttachments()));
  t.same(answer[TRANSFER], [reply!.raw.buffer]);
  t.equal(reply!.raw.byteLength, reply!.raw.buffer.byteLength, 'the moved buffer holds the raw MIME alone');
  t.equal(answerAttachmentSource(db, { ...request, index: 9 }), null);
  t.equal(AttachmentSourceReply.parse(null), null);
  t.notOk(AttachmentSourceReply.safeParse({ raw: 'text', listedSha256: null }).success, 'raw must be bytes');
  t.notOk(AttachmentSourceRequest.safeParse({ ...request, index: -1 }).success);
  t.notOk(AttachmentSourceRequest.safeParse({ ...request, extra: 1 }).success);
});
