/**
 * Every doveadm helper observably changes the mailbox as an IMAP client sees it: flags and
 * keywords, expunge, move, mailbox create/rename/delete (with SPECIAL-USE), UIDVALIDITY resets;
 * status and fetchAll report the server's truth.
 */
import { createHash } from 'node:crypto';
import t, { type Test } from 'tap';
import { startDovecot, type Dovecot } from '../harness/dovecot.ts';
import { mailAdmin, uidSet, mutf7 } from '../harness/doveadm.ts';
import { withImap } from '../harness/imap-client.ts';
import { appendMessages } from '../harness/place-mail.ts';

const msg = (i: number) => `From: a@example.org\r\nSubject: m${i}\r\nMessage-ID: <m${i}@example.org>\r\n\r\nbody ${i}\r\n`;

async function fresh(t: Test, count = 5): Promise<Dovecot> {
  const d = await startDovecot();
  t.teardown(() => d.stop());
  await appendMessages(
    d,
    'alice',
    'INBOX',
    Array.from({ length: count }, (_, i) => ({ raw: msg(i + 1) })),
  );
  return d;
}

/** Flags per UID as an IMAP session sees them (\Recent left out). */
async function imapFlags(d: Dovecot, mailbox: string): Promise<Record<number, string[]>> {
  return withImap(d, 'alice', async (c) => {
    await c.mailboxOpen(mailbox, { readOnly: true });
    const out: Record<number, string[]> = {};
    for await (const m of c.fetch('1:*', { uid: true, flags: true }, { uid: true })) {
      out[m.uid] = [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort();
    }
    return out;
  });
}

t.test('uidSet compresses runs; mutf7 matches RFC 3501', async (t) => {
  t.equal(uidSet([5, 1, 2, 3, 7, 9, 10]), '1:3,5,7,9:10');
  t.equal(uidSet(4), '4');
  t.throws(() => uidSet([]));
  t.equal(mutf7('Entwürfe'), 'Entw&APw-rfe');
  t.equal(mutf7('R&D'), 'R&-D');
  t.equal(mutf7('日本語'), '&ZeVnLIqe-');
});

t.test('flags: add, remove and set system flags and keywords', async (t) => {
  const d = await fresh(t);
  const admin = mailAdmin(d);
  await admin.addFlags('alice', 'INBOX', [1, 2], ['\\Seen', '$Label1']);
  await admin.addFlags('alice', 'INBOX', 3, ['\\Flagged', 'custom']);
  let flags = await imapFlags(d, 'INBOX');
  t.same(flags[1], ['$Label1', '\\Seen']);
  t.same(flags[3], ['\\Flagged', 'custom']);
  t.same(flags[4], []);
  await admin.removeFlags('alice', 'INBOX', [1], ['$Label1']);
  await admin.setFlags('alice', 'INBOX', [2], ['\\Answered']);
  await admin.setFlags('alice', 'INBOX', [3], []);
  flags = await imapFlags(d, 'INBOX');
  t.same(flags[1], ['\\Seen']);
  t.same(flags[2], ['\\Answered']);
  t.same(flags[3], []);
  const all = await admin.fetchAll('alice', 'INBOX');
  t.same(
    all.map((m) => m.flags),
    [['\\Seen'], ['\\Answered'], [], [], []],
  );
});

t.test('flag changes raise HIGHESTMODSEQ', async (t) => {
  const d = await fresh(t);
  const admin = mailAdmin(d);
  const before = await admin.status('alice', 'INBOX');
  await admin.addFlags('alice', 'INBOX', [1], ['\\Seen']);
  const after = await admin.status('alice', 'INBOX');
  t.ok(after.highestmodseq > before.highestmodseq);
  t.equal(after.uidvalidity, before.uidvalidity);
});

t.test('expunge and move', async (t) => {
  const d = await fresh(t);
  const admin = mailAdmin(d);
  await admin.expunge('alice', 'INBOX', [2, 4]);
  t.same(
    (await admin.fetchAll('alice', 'INBOX')).map((m) => m.uid),
    [1, 3, 5],
  );
  await admin.move('alice', 'INBOX', 'Archive', [1, 5]);
  t.same(
    (await admin.fetchAll('alice', 'INBOX')).map((m) => m.uid),
    [3],
  );
  const archived = await admin.fetchAll('alice', 'Archive');
  t.equal(archived.length, 2);
  const want = [msg(1), msg(5)].map((m) => createHash('sha256').update(m).digest('hex'));
  t.same(
    archived.map((m) => m.sha256),
    want,
    'moved bytes are the originals',
  );
  const s = await admin.status('alice', 'INBOX');
  t.equal(s.messages, 1);
  t.equal(s.uidnext, 6);
});

t.test('mailboxes: create (with SPECIAL-USE), rename, delete', async (t) => {
  const d = await fresh(t, 1);
  const admin = mailAdmin(d);
  await admin.createMailbox('alice', 'Projects/2024');
  await admin.createMailbox('alice', 'Receipts', '\\Important');
  await admin.createMailbox('alice', 'Entwürfe');
  t.ok((await admin.listMailboxes('alice')).includes('Projects/2024'));
  const seen = await withImap(d, 'alice', (c) => c.list());
  const byPath = new Map(seen.map((m) => [m.path, m]));
  t.ok(byPath.has('Projects/2024'));
  t.ok(byPath.has('Entwürfe'), 'non-ASCII name round-trips');
  t.ok(byPath.get('Receipts')?.flags.has('\\Important'), 'special-use shows in LIST');
  await admin.renameMailbox('alice', 'Projects/2024', 'Projects/2025');
  await admin.deleteMailbox('alice', 'Entwürfe');
  const names = await admin.listMailboxes('alice');
  t.ok(names.includes('Projects/2025'));
  t.notOk(names.includes('Projects/2024'));
  t.notOk(names.includes('Entwürfe'));
  await t.rejects(admin.deleteMailbox('alice', 'Nope'), /doesn't exist/);
});

t.test('resetUidValidity renumbers and changes UIDVALIDITY, as IMAP STATUS shows', async (t) => {
  const d = await fresh(t);
  const admin = mailAdmin(d);
  await admin.expunge('alice', 'INBOX', [1, 2]);
  await admin.addFlags('alice', 'INBOX', [3], ['\\Flagged']);
  const before = await admin.fetchAll('alice', 'INBOX');
  t.same(
    before.map((m) => m.uid),
    [3, 4, 5],
  );
  const r = await admin.resetUidValidity('alice', 'INBOX');
  t.not(r.after.uidvalidity, r.before.uidvalidity);
  const after = await admin.fetchAll('alice', 'INBOX');
  t.same(
    after.map((m) => m.uid),
    [1, 2, 3],
    'UIDs start again at 1',
  );
  t.same(
    after.map((m) => m.sha256),
    before.map((m) => m.sha256),
    'same messages',
  );
  t.same(
    after.map((m) => m.flags),
    before.map((m) => m.flags),
    'flags kept',
  );
  const status = await withImap(d, 'alice', (c) => c.status('INBOX', { uidValidity: true, uidNext: true }));
  t.equal(status && Number(status.uidValidity), r.after.uidvalidity);
  t.equal(status === false ? false : status.uidNext, 4);
});

t.test('resetUidValidity without renumbering keeps UIDs', async (t) => {
  const d = await fresh(t, 3);
  const admin = mailAdmin(d);
  const r = await admin.resetUidValidity('alice', 'INBOX', { renumber: false });
  t.equal(r.after.uidvalidity, r.before.uidvalidity + 1);
  t.same(
    (await admin.fetchAll('alice', 'INBOX')).map((m) => m.uid),
    [1, 2, 3],
  );
});

t.test('a selected session notices a UIDVALIDITY reset', async (t) => {
  const d = await fresh(t, 3);
  const admin = mailAdmin(d);
  const outcome = await withImap(d, 'alice', async (c) => {
    const box = await c.mailboxOpen('INBOX');
    const first = box.uidValidity;
    await admin.resetUidValidity('alice', 'INBOX');
    try {
      await c.noop();
      const again = await c.mailboxOpen('INBOX');
      return again.uidValidity !== first ? 'changed' : 'unchanged';
    } catch {
      return 'disconnected';
    }
  }).catch(() => 'disconnected');
  t.not(outcome, 'unchanged', `session saw: ${outcome}`);
});
