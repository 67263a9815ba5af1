/**
 * The sent copy and drafts live on the server (Dovecot), placed through the
 * account's change journal: a Sent send is appended to the sent folder once
 * with \Seen, and the mirror stores it once; a draft is filed with \Draft,
 * an update replaces the copy, `send_draft` sends the draft's exact message
 * and removes the draft once Sent; `delete_draft` removes the copy.
 */
import { createHash } from 'node:crypto';
import Libsql from 'libsql';
import t from 'tap';
import { mailAdmin, type ServerMessage } from '../../harness/doveadm.ts';
import { call, type Json, type Outboxed, settled, sleep, startOutboxed } from './outbox-setup.ts';

t.setTimeout(240_000);

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

function rawOf(o: Outboxed, table: 'outgoing_emails' | 'drafts', id: string): Buffer {
  const db = new Libsql(`${o.dir}/mailcairn.db`, { readonly: true });
  try {
    const row = db.prepare(`SELECT raw_mime FROM ${table} WHERE id = ?`).get([Number(id.slice(1))]) as { raw_mime: Buffer };
    return Buffer.from(row.raw_mime);
  } finally {
    db.close();
  }
}

/** Poll a folder until `check` holds (bounded). */
async function folderUntil(o: Outboxed, folder: string, check: (messages: ServerMessage[]) => boolean, what: string): Promise<ServerMessage[]> {
  const admin = mailAdmin(o.dovecot);
  const until = Date.now() + 20_000;
  let last: ServerMessage[] = [];
  while (Date.now() < until) {
    last = await admin.fetchAll('ann', folder);
    if (check(last)) return last;
    await sleep(200);
  }
  throw new Error(`${folder}: ${what} never held (${last.length} messages)`);
}

t.test('a Sent send is appended to the sent folder once, with \\Seen, and mirrored once', async (t) => {
  const o = await startOutboxed(t);
  const sent = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['copy.reader@example.org'],
    subject: 'Filed copy',
    plainTextBody: 'x',
    idempotencyKey: 's1',
  });
  await settled(o.agent, sent.value.outgoingEmailId, ['sent']);
  const raw = rawOf(o, 'outgoing_emails', sent.value.outgoingEmailId);
  const [copy] = await folderUntil(o, 'Sent', (m) => m.length > 0, 'a copy');
  t.equal(copy!.sha256, sha(raw), 'the copy is the message sent, byte for byte');
  t.ok(copy!.flags.includes('\\Seen'), 'with \\Seen');
  await o.sync.syncNow('ann');
  await o.sync.syncNow('ann');
  const { value } = await call(o.agent, 'list_emails', { folders: ['sent'] });
  t.equal(value.emails.length, 1, 'the mirror stores it once');
  t.equal(value.emails[0].subject, 'Filed copy');
  await sleep(2_000);
  t.equal((await mailAdmin(o.dovecot).fetchAll('ann', 'Sent')).length, 1, 'appended once');
});

t.test('drafts: filed with \\Draft, replaced on update, removed after send_draft is Sent or on delete', async (t) => {
  const o = await startOutboxed(t);
  const saved = await call(o.agent, 'save_draft', {
    account: 'ann',
    subject: 'Draft one',
    to: ['draft.reader@example.org'],
    bcc: ['quiet@example.org'],
    plainTextBody: 'first words',
  });
  t.ok(saved.ok, saved.text);
  t.match(saved.value, { draftId: /^d\d+$/, accountId: 'ann', state: 'held', revision: 1 });
  const first = await folderUntil(o, 'Drafts', (m) => m.length === 1, 'the first revision');
  t.ok(first[0]!.flags.includes('\\Draft'), 'filed with \\Draft');
  t.equal(first[0]!.sha256, sha(rawOf(o, 'drafts', saved.value.draftId)));

  const updated = await call(o.agent, 'update_draft', {
    draftId: saved.value.draftId,
    account: 'ann',
    subject: 'Draft two',
    to: ['draft.reader@example.org'],
    bcc: ['quiet@example.org'],
    plainTextBody: 'second words',
  });
  t.match(updated.value, { draftId: saved.value.draftId, revision: 2 });
  const secondRaw = rawOf(o, 'drafts', saved.value.draftId);
  const second = await folderUntil(o, 'Drafts', (m) => m.length === 1 && m[0]!.sha256 === sha(secondRaw), 'only the second revision');
  t.ok(second[0]!.uid > first[0]!.uid, 'the new version was appended, the old one removed');

  const sent = await call(o.agent, 'send_draft', { draftId: saved.value.draftId });
  t.ok(sent.ok, sent.text);
  const done = await settled(o.agent, sent.value.outgoingEmailId, ['sent']);
  t.same(
    done.recipients.map((r: Json) => [r.address, r.header]),
    [
      ['draft.reader@example.org', 'to'],
      ['quiet@example.org', 'bcc'],
    ],
  );
  await o.smtp.waitForDeliveries(1, 10_000);
  t.equal(sha(o.smtp.deliveries[0]!.raw), sha(secondRaw), "the draft's exact message went out");
  await folderUntil(o, 'Drafts', (m) => m.length === 0, 'the draft removed');
  await folderUntil(o, 'Sent', (m) => m.length === 1, 'the sent copy');
  const again = await call(o.agent, 'update_draft', {
    draftId: saved.value.draftId,
    account: 'ann',
    subject: 'Too late',
    to: ['x@example.org'],
    plainTextBody: 'x',
  });
  t.match(again.text, /^Mailcairn error 58001: /, 'a sent draft cannot be restated');

  const other = await call(o.agent, 'save_draft', { account: 'ann', subject: 'Throwaway', to: ['nobody@example.org'], plainTextBody: 'x' });
  await folderUntil(o, 'Drafts', (m) => m.length === 1, 'the throwaway filed');
  const foreign = await call(o.other, 'delete_draft', { draftId: other.value.draftId });
  t.match(foreign.text, /^Mailcairn error 53001: /, "another caller's draft is unknown to it");
  const deleted = await call(o.agent, 'delete_draft', { draftId: other.value.draftId });
  t.same(deleted.value, { draftId: other.value.draftId, result: 'deleted' });
  await folderUntil(o, 'Drafts', (m) => m.length === 0, 'the throwaway removed');
  const twice = await call(o.agent, 'delete_draft', { draftId: other.value.draftId });
  t.match(twice.text, /^Mailcairn error 58001: /);

  const reply = await call(o.agent, 'save_draft', { answeredEmailId: 'ezzzzzz', answering: 'senderOnly', plainTextBody: 'x' });
  t.match(reply.text, /^Mailcairn error 53001: /, 'a reply draft names a stored email the caller may read');
  const both = await call(o.agent, 'save_draft', { account: 'ann', subject: 's', answeredEmailId: 'ezzzzzz', answering: 'forward', plainTextBody: 'x' });
  t.match(both.text, /either account and subject, or answeredEmailId and answering/);
});
