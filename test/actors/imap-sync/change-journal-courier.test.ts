/**
 * The change journal against the third real server, Courier: every change
 * kind asked of the account's sync actor the way mail rules will ask
 * (`imap-sync.record-changes`), read back on the server over IMAP, the
 * local rows followed without a refetch, a run afterwards duplicating
 * nothing, and `set_mail_flags` once through the MCP SDK's client.
 *
 * Courier as Debian ships it has neither MOVE nor CONDSTORE, so these are
 * the fallback paths: a relocation is COPY, `\Deleted` and `UID EXPUNGE` of
 * that UID (UIDPLUS), flags are stored without UNCHANGEDSINCE, and folders
 * live under the `INBOX.` namespace. A message another client marked
 * `\Deleted` is never expunged by ours. Then Courier announcing no UIDPLUS
 * either: no COPYUID (the copy is found by what the placement recorded), a
 * deletion and a relocation refused, since a plain EXPUNGE would remove
 * every message marked `\Deleted` in the folder.
 */
import t from 'tap';
import { COURIER_DEBIAN_CAPABILITY, courierAvailable, startCourier } from '../../harness/courier.ts';
import { imapAdmin } from '../../harness/imap-admin.ts';
import { ended, ask, everyChangeKind, localRows, mid, mirrorEqualsServer, onServer, setup, type JournalPeer } from './journal-peer.ts';

t.setTimeout(300_000);

const skip = !courierAvailable() && 'Courier is not installed (see .ci/run)';
/** Debian's IMAP_CAPABILITY without UIDPLUS. */
const WITHOUT_UIDPLUS = COURIER_DEBIAN_CAPABILITY.replace(' UIDPLUS', '');

/** Courier announcing `capability` (IMAP_CAPABILITY) when a variant gives one; its folders under the `INBOX.` namespace. */
const COURIER: JournalPeer = {
  name: 'Courier',
  async start(t, capability) {
    const courier = await startCourier({ users: [{ user: 'carol', password: 'pw-carol' }], ...(capability ? { capability } : {}) });
    t.teardown(() => courier.stop());
    return courier;
  },
  folder: (name) => `INBOX.${name}`,
};

t.test('Courier: every change kind applied, followed locally, and a run duplicates nothing', { skip }, async (t) => {
  const s = await setup(t, COURIER);
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('CONDSTORE'), 'the paths without MOVE and CONDSTORE run');
  await everyChangeKind(t, s);
});

t.test('Courier as shipped: a relocation and a deletion expunge their own UID only, never a message another client marked deleted', { skip }, async (t) => {
  const s = await setup(t, COURIER);
  t.ok(s.capabilities.includes('UIDPLUS'), 'UIDPLUS offered');
  // Another client marked a message deleted without expunging it: no change of ours may remove it.
  await imapAdmin(s.server).addFlags('carol', 'INBOX', (await onServer(s.server, 'INBOX')).get(mid(10))![0]!.uid, ['\\Deleted']);

  const [flag] = await ended(s, await ask(s, 1, [{ kind: 'set-flagged', value: true }]));
  t.equal(flag!.outcome, 'applied');
  t.same((await onServer(s.server, 'INBOX')).get(mid(1))?.[0]?.flags, ['\\Flagged'], 'set-flagged without CONDSTORE');

  const [moved] = await ended(s, await ask(s, 2, [{ kind: 'relocate', targetPath: s.path.Filed }]));
  t.equal(moved!.outcome, 'applied');
  const inbox = await onServer(s.server, 'INBOX');
  t.notOk(inbox.has(mid(2)), 'left INBOX');
  t.equal((await onServer(s.server, s.path.Filed)).get(mid(2))?.length, 1, 'once in INBOX.Filed');
  t.ok(inbox.has(mid(10)), 'the message another client marked deleted is still there');
  t.same(localRows(s, mid(2)), [{ id: s.id(2), alias: 'filed' }], 'the local id follows');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.equal(deleted!.outcome, 'applied');
  const after = await onServer(s.server, 'INBOX');
  t.notOk(after.has(mid(3)), 'deleted');
  t.ok(after.has(mid(10)), 'UID EXPUNGE left the other deleted message alone');
  await mirrorEqualsServer(t, s, 'after a run');
});

t.test('Courier without UIDPLUS (neither MOVE nor UIDPLUS): a copy is found without COPYUID; a relocation and a deletion are refused', { skip }, async (t) => {
  const s = await setup(t, COURIER, WITHOUT_UIDPLUS);
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('UIDPLUS'), `both absent (${s.capabilities.join(' ')})`);
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
  const [copied] = await ended(s, await ask(s, 2, [{ kind: 'copy', targetPath: s.path.Work }]));
  t.equal(copied!.outcome, 'applied');
  const work = await onServer(s.server, s.path.Work);
  t.equal(work.get(mid(2))?.length, 1, 'copied once');
  t.equal(copied!.target_uid, work.get(mid(2))![0]!.uid, 'its UID found without COPYUID');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.match(deleted, { state: 'dead', outcome: 'refused', failure_reason: 'The server cannot expunge one message alone (no UIDPLUS), so nothing was deleted.' });
  const inbox = await onServer(s.server, 'INBOX');
  t.ok(inbox.has(mid(3)), 'nothing deleted');
  t.ok(inbox.has(mid(10)), 'and the other deleted message is still there');
  t.same(localRows(s, mid(3)), [{ id: s.id(3), alias: 'inbox' }], 'still mirrored');
  await mirrorEqualsServer(t, s, 'after a run');
});
