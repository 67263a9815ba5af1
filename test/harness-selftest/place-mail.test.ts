/**
 * Placing mail: APPEND keeps order, flags and internal dates and returns UIDs; the Maildir fast
 * path gives Dovecot the same messages (UIDs in order, flags, keywords, dates, served bytes);
 * `doveadm save` delivers without IMAP.
 */
import t from 'tap';
import { startDovecot } from '../harness/dovecot.ts';
import { mailAdmin } from '../harness/doveadm.ts';
import { generateMailbox } from '../harness/generator.ts';
import { withImap } from '../harness/imap-client.ts';
import { appendMessages, saveMessage, writeMaildir } from '../harness/place-mail.ts';

t.test('APPEND and Maildir placement agree with each other and with what was asked', async (t) => {
  const d = await startDovecot();
  t.teardown(() => d.stop());
  const admin = mailAdmin(d);
  const messages = [...generateMailbox({ seed: 11, count: 60 })];
  messages[3]!.flags = ['\\Seen', '\\Flagged', '$Label1', 'Work'];
  messages[4]!.flags = ['\\Answered', '\\Draft', '\\Deleted'];

  const uids = await appendMessages(d, 'alice', 'INBOX', messages);
  t.same(
    uids,
    messages.map((_, i) => i + 1),
    'UIDs in order',
  );
  t.equal(await writeMaildir(d, 'alice', 'Archive', messages), messages.length);
  t.equal(await writeMaildir(d, 'alice', 'Old/2019', messages.slice(0, 5)), 5, 'creates a missing folder');

  const inbox = await admin.fetchAll('alice', 'INBOX');
  const archive = await admin.fetchAll('alice', 'Archive');
  t.same(
    archive.map((m) => m.uid),
    uids,
    'Maildir files numbered in the order given',
  );
  t.same(
    archive.map((m) => m.sha256),
    inbox.map((m) => m.sha256),
    'same bytes served both ways',
  );
  t.same(
    archive.map((m) => m.flags),
    inbox.map((m) => m.flags),
    'same flags both ways',
  );
  t.same(
    inbox.map((m) => m.flags),
    messages.map((m) => [...m.flags].sort()),
  );
  t.same(inbox[3]!.flags, ['$Label1', 'Work', '\\Flagged', '\\Seen']);

  for (const box of ['INBOX', 'Archive']) {
    const dates = await withImap(d, 'alice', async (c) => {
      await c.mailboxOpen(box, { readOnly: true });
      const out: number[] = [];
      for await (const m of c.fetch('1:*', { internalDate: true }, { uid: true })) out.push(new Date(m.internalDate!).getTime());
      return out;
    });
    t.same(
      dates,
      messages.map((m) => m.internalDate.getTime()),
      `${box}: internal dates kept`,
    );
  }
  const status = await admin.status('alice', 'Archive');
  t.equal(status.messages, 60);
  t.equal(status.uidnext, 61);
});

t.test('writeMaildir into a mailbox that already has mail keeps numbering on', async (t) => {
  const d = await startDovecot();
  t.teardown(() => d.stop());
  const admin = mailAdmin(d);
  await appendMessages(d, 'alice', 'INBOX', [{ raw: 'Subject: first\r\n\r\n1\r\n', flags: ['Tag1'] }]);
  await writeMaildir(d, 'alice', 'INBOX', [
    { raw: 'Subject: second\r\n\r\n2\r\n', flags: ['Tag2'] },
    { raw: 'Subject: third\n\n3\n', flags: ['Tag1', '\\Seen'] },
  ]);
  await writeMaildir(d, 'alice', 'INBOX', [{ raw: 'Subject: fourth\r\n\r\n4\r\n' }]);
  const all = await admin.fetchAll('alice', 'INBOX');
  t.same(
    all.map((m) => m.uid),
    [1, 2, 3, 4],
  );
  t.same(
    all.map((m) => m.flags),
    [['Tag1'], ['Tag2'], ['Tag1', '\\Seen'], []],
    'keywords share dovecot-keywords',
  );
  t.equal(all[2]!.size, 'Subject: third\r\n\r\n3\r\n'.length, 'LF-only file served with CRLF and the right size');
});

t.test('saveMessage delivers behind every session', async (t) => {
  const d = await startDovecot();
  t.teardown(() => d.stop());
  await saveMessage(d, 'alice', 'Junk', 'Subject: spam\r\n\r\nbuy\r\n');
  t.equal((await mailAdmin(d).status('alice', 'Junk')).messages, 1);
});
