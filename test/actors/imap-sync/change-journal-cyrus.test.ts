/**
 * The change journal against the second real server, Cyrus: every change
 * kind asked of the account's sync actor the way mail rules will ask
 * (`imap-sync.record-changes`), read back on the server over IMAP, the
 * local rows followed without a refetch, a run afterwards duplicating
 * nothing, and `set_mail_flags` once through the MCP SDK's client.
 *
 * Then the same with capabilities Cyrus hides (`suppress_capabilities`):
 * without MOVE (COPY, `\Deleted`, `UID EXPUNGE`) and without CONDSTORE
 * (no UNCHANGEDSINCE); without UIDPLUS (no COPYUID: the copy is found by
 * what the placement recorded; a deletion is refused); and without either
 * MOVE or UIDPLUS, where a relocation would need a plain EXPUNGE, which
 * removes every message marked `\Deleted` in the folder.
 */
import t from 'tap';
import { cyrusAvailable, startCyrus } from '../../harness/cyrus.ts';
import { imapAdmin } from '../../harness/imap-admin.ts';
import { ended, ask, everyChangeKind, localRows, mid, mirrorEqualsServer, onServer, setup, type JournalPeer } from './journal-peer.ts';

t.setTimeout(300_000);

const skip = !cyrusAvailable() && 'Cyrus is not installed (see .ci/run)';

/** Cyrus with capabilities hidden by `suppress_capabilities` when a variant names them. */
const CYRUS: JournalPeer = {
  name: 'Cyrus',
  async start(t, suppress) {
    const cyrus = await startCyrus({
      users: [{ user: 'carol', password: 'pw-carol' }],
      ...(suppress ? { extraConfig: `suppress_capabilities: ${suppress}\n` } : {}),
    });
    t.teardown(() => cyrus.stop());
    return cyrus;
  },
  folder: (name) => name,
};

t.test('Cyrus: every change kind applied, followed locally, and a run duplicates nothing', { skip }, async (t) => {
  await everyChangeKind(t, await setup(t, CYRUS));
});

t.test('Cyrus without MOVE and CONDSTORE: relocate by COPY and UID EXPUNGE; flags without UNCHANGEDSINCE', { skip }, async (t) => {
  const s = await setup(t, CYRUS, 'MOVE CONDSTORE QRESYNC');
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('CONDSTORE'), `hidden (${s.capabilities.join(' ')})`);
  t.ok(s.capabilities.includes('UIDPLUS'));
  // Another client marked a message deleted without expunging it: no change of ours may remove it.
  await imapAdmin(s.server).addFlags('carol', 'INBOX', (await onServer(s.server, 'INBOX')).get(mid(10))![0]!.uid, ['\\Deleted']);

  const [flag] = await ended(s, await ask(s, 1, [{ kind: 'set-flagged', value: true }]));
  t.equal(flag!.outcome, 'applied');
  t.same((await onServer(s.server, 'INBOX')).get(mid(1))?.[0]?.flags, ['\\Flagged'], 'set-flagged without CONDSTORE');

  const [moved] = await ended(s, await ask(s, 2, [{ kind: 'relocate', targetPath: s.path.Filed }]));
  t.equal(moved!.outcome, 'applied');
  const inbox = await onServer(s.server, 'INBOX');
  t.notOk(inbox.has(mid(2)), 'left INBOX');
  t.equal((await onServer(s.server, s.path.Filed)).get(mid(2))?.length, 1, 'once in Filed');
  t.ok(inbox.has(mid(10)), 'the message another client marked deleted is still there');
  t.same(localRows(s, mid(2)), [{ id: s.id(2), alias: 'filed' }], 'the local id follows');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.equal(deleted!.outcome, 'applied');
  const after = await onServer(s.server, 'INBOX');
  t.notOk(after.has(mid(3)), 'deleted');
  t.ok(after.has(mid(10)), 'UID EXPUNGE left the other deleted message alone');
  await mirrorEqualsServer(t, s, 'after a run');
});

t.test('Cyrus without UIDPLUS: no COPYUID, the copy is found; a deletion is refused', { skip }, async (t) => {
  const s = await setup(t, CYRUS, 'UIDPLUS');
  t.notOk(s.capabilities.includes('UIDPLUS'), 'UIDPLUS hidden');
  t.ok(s.capabilities.includes('MOVE'));

  const [moved] = await ended(s, await ask(s, 1, [{ kind: 'relocate', targetPath: s.path.Filed }]));
  t.equal(moved!.outcome, 'applied');
  const filed = await onServer(s.server, s.path.Filed);
  t.equal(filed.get(mid(1))?.length, 1, 'moved once');
  t.equal(moved!.target_uid, filed.get(mid(1))![0]!.uid, 'its UID found without COPYUID');
  t.same(localRows(s, mid(1)), [{ id: s.id(1), alias: 'filed' }], 'the local id follows');

  const [copied] = await ended(s, await ask(s, 2, [{ kind: 'copy', targetPath: s.path.Work }]));
  t.equal(copied!.outcome, 'applied');
  const work = await onServer(s.server, s.path.Work);
  t.equal(work.get(mid(2))?.length, 1, 'copied once');
  t.equal(copied!.target_uid, work.get(mid(2))![0]!.uid, 'its UID found without COPYUID');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.match(deleted, { state: 'dead', outcome: 'refused', failure_reason: 'The server cannot expunge one message alone (no UIDPLUS), so nothing was deleted.' });
  t.ok((await onServer(s.server, 'INBOX')).has(mid(3)), 'nothing deleted');
  t.same(localRows(s, mid(3)), [{ id: s.id(3), alias: 'inbox' }], 'still mirrored');
  await mirrorEqualsServer(t, s, 'after a run');
});

t.test('Cyrus without MOVE or UIDPLUS: a relocation never expunges another message', { skip }, async (t) => {
  const s = await setup(t, CYRUS, 'MOVE UIDPLUS');
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('UIDPLUS'), 'both hidden');
  await imapAdmin(s.server).addFlags('carol', 'INBOX', (await onServer(s.server, 'INBOX')).get(mid(10))![0]!.uid, ['\\Deleted']);

  const [moved] = await ended(s, await ask(s, 1, [{ kind: 'relocate', targetPath: s.path.Filed }]));
  t.ok((await onServer(s.server, 'INBOX')).has(mid(10)), 'the message another client marked deleted is still there');
  t.match(moved, {
    state: 'dead',
    outcome: 'refused',
    failure_reason: 'The server can neither move a message nor expunge one alone (no MOVE, no UIDPLUS), so nothing was moved.',
  });
  t.ok((await onServer(s.server, 'INBOX')).has(mid(1)), 'nothing moved');
  t.notOk((await onServer(s.server, s.path.Filed)).has(mid(1)), 'no copy left behind');
  t.same(localRows(s, mid(1)), [{ id: s.id(1), alias: 'inbox' }]);

  // A copy needs neither: found by what the placement recorded.
  const [copied] = await ended(s, await ask(s, 2, [{ kind: 'copy', targetPath: s.path.Filed }]));
  t.equal(copied!.outcome, 'applied');
  t.equal((await onServer(s.server, s.path.Filed)).get(mid(2))?.length, 1, 'copied once');
  await mirrorEqualsServer(t, s, 'after a run');
});
