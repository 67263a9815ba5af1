/**
 * readAttachment against a real migrated database: the stored message is
 * read afresh, so tombstoning, damage, another account or a changed listing
 * all answer null; a stored message gives the decoded bytes.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { AttachmentReply, AttachmentRequest } from '../../../actors/mail-query/protocol.ts';
import { answerAttachment, readAttachment } from '../../../actors/mail-query/attachment.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { isWithTransfer, TRANSFER } from '../../../runtime/actor.ts';
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

t.test('a stored message gives each attachment by its listed index', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const id = store(db, inbox.id, 1, rawWithAttachments());
  const first = readAttachment(db, { messageId: id, index: 0, accounts: ['alice'] });
  t.match(first, { filename: 'a.pdf', contentType: 'application/pdf' });
  t.ok(first!.content.equals(pdf));
  const second = readAttachment(db, { messageId: id, index: 1, accounts: ['bob', 'alice'] });
  t.match(second, { filename: 'note.txt', contentType: 'text/plain' });
  t.ok(second!.content.equals(note));
  t.equal(readAttachment(db, { messageId: id, index: 2, accounts: ['alice'] }), null, 'past the list');
});

t.test('anything but a stored, intact message of a listed account is null', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const id = store(db, inbox.id, 1, rawWithAttachments());
  t.equal(readAttachment(db, { messageId: id, index: 0, accounts: ['bob'] }), null, 'another account');
  t.equal(readAttachment(db, { messageId: id, index: 0, accounts: [] }), null, 'no account');
  t.equal(readAttachment(db, { messageId: id + 100, index: 0, accounts: ['alice'] }), null, 'no such message');
  t.equal(readAttachment(db, { messageId: -1, index: 0, accounts: ['alice'] }), null, 'not an id');
  t.equal(readAttachment(db, { messageId: id, index: -1, accounts: ['alice'] }), null, 'not an index');

  const damaged = store(db, inbox.id, 2, rawWithAttachments());
  const altered = rawWithAttachments();
  altered[altered.length - 10] = altered[altered.length - 10]! ^ 1;
  run(db.prepare('UPDATE message_raw SET mime = ? WHERE message_id = ?'), [altered, damaged]);
  t.equal(readAttachment(db, { messageId: damaged, index: 0, accounts: ['alice'] }), null, 'raw MIME no longer matches its SHA-256');

  const gone = store(db, inbox.id, 3, rawWithAttachments());
  t.ok(readAttachment(db, { messageId: gone, index: 0, accounts: ['alice'] }), 'served while stored');
  t.equal(tombstone(db, inbox.id, 1, [3], 'expunged', 2), 1);
  t.equal(readAttachment(db, { messageId: gone, index: 0, accounts: ['alice'] }), null, 'the link dies with the message');
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
  t.equal(readAttachment(db, { messageId: listed, index: 0, accounts: ['alice'] }), null, 'never another attachment than the one listed');

  const underived = store(db, inbox.id, 2, rawWithAttachments(), false);
  t.ok(readAttachment(db, { messageId: underived, index: 1, accounts: ['alice'] })!.content.equals(note), 'not derived yet: the parser decides');
});

t.test('the pool handler moves the bytes and its messages validate', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const id = store(db, inbox.id, 1, rawWithAttachments());
  const slice = { database: '/unused/by/the/handler.db', busyTimeoutMs: 1000, synchronous: 'Full' };
  const request = AttachmentRequest.parse({ type: 'mail-query.attachment', store: slice, messageId: id, index: 0, accounts: ['alice'] });
  const answer = answerAttachment(db, request);
  t.ok(isWithTransfer(answer));
  if (!isWithTransfer(answer)) return;
  const reply = AttachmentReply.parse(answer.value);
  t.ok(reply !== null && Buffer.from(reply.content).equals(pdf));
  t.same(answer[TRANSFER], [reply!.content.buffer]);
  t.equal(answerAttachment(db, { ...request, index: 9 }), null);
  t.equal(AttachmentReply.parse(null), null);
  t.notOk(AttachmentRequest.safeParse({ ...request, index: -1 }).success);
  t.notOk(AttachmentRequest.safeParse({ ...request, extra: 1 }).success);
});
