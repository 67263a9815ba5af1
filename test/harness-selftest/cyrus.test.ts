/**
 * The second real server: a private Cyrus starts on a run-time port, advertises CONDSTORE,
 * QRESYNC, IDLE and SPECIAL-USE, takes APPENDs, is changed behind a session's back over IMAP
 * (imapAdmin), restarts on its port and is gone by PID after stop. Skipped where Cyrus cannot run.
 */
import t from 'tap';
import { cyrusAvailable, startCyrus } from '../harness/cyrus.ts';
import { generateMailbox } from '../harness/generator.ts';
import { imapAdmin } from '../harness/imap-admin.ts';
import { imapClient, withImap } from '../harness/imap-client.ts';
import { appendMessages } from '../harness/place-mail.ts';

const skip = cyrusAvailable() ? false : 'Cyrus not installed here (or not root); see .ci/run';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('starts, serves what the sync needs, restarts, stops by PID', { skip }, async (t) => {
  const cyrus = await startCyrus();
  t.teardown(() => cyrus.stop());
  await withImap(cyrus, 'alice', async (c) => {
    for (const cap of ['CONDSTORE', 'QRESYNC', 'IDLE', 'SPECIAL-USE', 'UIDPLUS', 'MOVE']) t.ok(c.capabilities.has(cap), cap);
    const uses = Object.fromEntries((await c.list()).map((m) => [m.path, m.specialUse ?? null]));
    t.same(uses, { INBOX: '\\Inbox', Archive: '\\Archive', Drafts: '\\Drafts', Junk: '\\Junk', Sent: '\\Sent', Trash: '\\Trash' });
  });
  const messages = [...generateMailbox({ seed: 4, count: 25 })];
  const uids = await appendMessages(cyrus, 'alice', 'INBOX', messages);
  t.same(
    uids,
    messages.map((_, i) => i + 1),
  );
  const { port, pid } = cyrus;
  await cyrus.restart();
  t.equal(cyrus.port, port);
  t.notOk(alive(pid));
  const admin = imapAdmin(cyrus);
  t.equal((await admin.status('alice', 'INBOX')).messages, 25);
  const last = cyrus.pid;
  await cyrus.stop();
  t.notOk(alive(last), 'master gone after stop');
});

t.test('imapAdmin changes a Cyrus mailbox behind an IDLE session', { skip }, async (t) => {
  const cyrus = await startCyrus();
  t.teardown(() => cyrus.stop());
  const admin = imapAdmin(cyrus);
  await appendMessages(cyrus, 'alice', 'Archive', [...generateMailbox({ seed: 8, count: 6 })]);
  const watcher = imapClient(cyrus, 'alice');
  watcher.on('error', () => undefined);
  await watcher.connect();
  t.teardown(() => watcher.close());
  await watcher.mailboxOpen('INBOX');
  const exists = new Promise<number>((resolve) => watcher.on('exists', (e: { count: number }) => resolve(e.count)));
  void watcher.idle();
  await new Promise((r) => setTimeout(r, 200));
  await admin.move('alice', 'Archive', 'INBOX', [1, 2]);
  let timer: NodeJS.Timeout | undefined;
  const seen = await Promise.race([exists, new Promise<number>((r) => (timer = setTimeout(() => r(-1), 10_000)))]);
  clearTimeout(timer);
  t.equal(seen, 2, 'IDLE saw the moved messages');

  await admin.addFlags('alice', 'Archive', [3], ['\\Seen', '$Label1']);
  await admin.expunge('alice', 'Archive', [4]);
  const archive = await admin.fetchAll('alice', 'Archive');
  t.same(
    archive.map((m) => m.uid),
    [3, 5, 6],
  );
  t.same(archive[0]!.flags, ['$Label1', '\\Seen']);
  await admin.createMailbox('alice', 'Receipts', '\\Important');
  const receipts = (await withImap(cyrus, 'alice', (c) => c.list())).find((m) => m.path === 'Receipts');
  t.ok(receipts?.flags.has('\\Important') || receipts?.flags.has('\\important'), 'CREATE … USE sets the special-use');
  const reset = await admin.resetUidValidity('alice', 'Archive');
  t.not(reset.after.uidvalidity, reset.before.uidvalidity);
  const renumbered = await admin.fetchAll('alice', 'Archive');
  t.same(
    renumbered.map((m) => m.uid),
    [1, 2, 3],
  );
  t.same(
    renumbered.map((m) => m.sha256),
    archive.map((m) => m.sha256),
  );
  t.same(
    renumbered.map((m) => m.flags),
    archive.map((m) => m.flags),
  );
  const again = (await withImap(cyrus, 'alice', (c) => c.list())).find((m) => m.path === 'Archive');
  t.equal(again?.specialUse, '\\Archive', 'special-use restored');
});

t.test('Cyrus with TLS: implicit TLS and STARTTLS', { skip }, async (t) => {
  const cyrus = await startCyrus({ tls: true });
  t.teardown(() => cyrus.stop());
  await withImap(cyrus, 'alice', async (c) => t.ok(c.secureConnection, 'implicit TLS'), { tls: true });
  await withImap(cyrus, 'alice', async (c) => t.ok(c.secureConnection, 'STARTTLS'), { starttls: true });
});
