/**
 * The third real server: a private Courier IMAP starts on a run-time port with its own userdb,
 * answers with Courier's namespace (`INBOX.` prefix, `.` delimiter) and capabilities, takes APPENDs,
 * is changed behind a session's back over IMAP (imapAdmin), keeps users apart from a second Courier,
 * restarts on its port and is gone by PID — its whole process group — after stop.
 * Skipped where Courier cannot run.
 */
import t from 'tap';
import { COURIER_FOLDERS, courierAvailable, startCourier } from '../harness/courier.ts';
import { generateMailbox } from '../harness/generator.ts';
import { imapAdmin, rawImap } from '../harness/imap-admin.ts';
import { withImap } from '../harness/imap-client.ts';
import { appendMessages } from '../harness/place-mail.ts';

const skip = courierAvailable() ? false : 'Courier not installed here (or not root); see .ci/run';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('starts, answers as Courier does, restarts, stops its process group', { skip }, async (t) => {
  const courier = await startCourier();
  t.teardown(() => courier.stop());
  await withImap(courier, 'alice', async (c) => {
    for (const cap of ['IDLE', 'UIDPLUS', 'NAMESPACE']) t.ok(c.capabilities.has(cap), `offers ${cap}`);
    for (const cap of ['MOVE', 'CONDSTORE', 'QRESYNC', 'SPECIAL-USE', 'ESEARCH', 'LITERAL+']) t.notOk(c.capabilities.has(cap), `lacks ${cap}`);
    const listed = await c.list();
    t.same(listed.map((m) => m.path).sort(), ['INBOX', ...COURIER_FOLDERS].sort());
    t.ok(
      listed.every((m) => m.delimiter === '.'),
      'delimiter .',
    );
    t.ok(
      listed.every((m) => m.specialUseSource !== 'extension'),
      'no SPECIAL-USE attributes from the server',
    );
    t.equal(listed.find((m) => m.path === 'INBOX.Sent')?.specialUse, '\\Sent', 'imapflow guesses \\Sent from the name');
  });
  t.match(await rawImap(courier, 'alice', ['NAMESPACE']), /\* NAMESPACE \(\("INBOX\." "\."\)\)/, 'personal namespace INBOX. with .');

  const messages = [...generateMailbox({ seed: 4, count: 25 })];
  const uids = await appendMessages(courier, 'alice', 'INBOX', messages);
  t.same(
    uids,
    messages.map((_, i) => i + 1),
  );
  const { port, pid } = courier;
  await courier.restart();
  t.equal(courier.port, port);
  t.notOk(groupAlive(pid), 'the old process group is gone');
  t.equal((await imapAdmin(courier).status('alice', 'INBOX')).messages, 25);
  const last = courier.pid;
  await courier.stop();
  t.notOk(alive(last), 'couriertcpd gone after stop');
  t.notOk(groupAlive(last), 'authdaemond and the sessions gone with it');
});

t.test('two Courier servers keep their users apart; a user added later logs in', { skip }, async (t) => {
  const one = await startCourier({ users: [{ user: 'ann', password: 'pw-one' }] });
  t.teardown(() => one.stop());
  const two = await startCourier({ users: [{ user: 'ann', password: 'pw-two' }] });
  t.teardown(() => two.stop());
  await appendMessages(one, 'ann', 'INBOX', [...generateMailbox({ seed: 1, count: 3 })]);
  t.equal((await imapAdmin(two).status('ann', 'INBOX')).messages, 0, 'the second server has its own mail');
  await t.rejects(
    withImap({ ...two, users: [{ user: 'ann', password: 'pw-one' }] }, 'ann', async () => undefined),
    'the first server password does not open the second',
  );
  await two.addUser({ user: 'bob', password: 'pw-bob' });
  t.equal((await imapAdmin(two).status('bob', 'INBOX')).messages, 0, 'the new user logs in');
});

t.test('imapAdmin changes a Courier mailbox behind a session', { skip }, async (t) => {
  const courier = await startCourier();
  t.teardown(() => courier.stop());
  const admin = imapAdmin(courier);
  await admin.createMailbox('alice', 'INBOX.Archive');
  await appendMessages(courier, 'alice', 'INBOX.Archive', [...generateMailbox({ seed: 8, count: 6 })]);
  await admin.move('alice', 'INBOX.Archive', 'INBOX', [1, 2]);
  t.equal((await admin.status('alice', 'INBOX')).messages, 2, 'moved (COPY and expunge, no MOVE)');
  await admin.addFlags('alice', 'INBOX.Archive', [3], ['\\Seen', '$Label1']);
  await admin.expunge('alice', 'INBOX.Archive', [4]);
  const archive = await admin.fetchAll('alice', 'INBOX.Archive');
  t.same(
    archive.map((m) => m.uid),
    [3, 5, 6],
  );
  t.same(archive[0]!.flags, ['$Label1', '\\Seen']);
  const reset = await admin.resetUidValidity('alice', 'INBOX.Archive');
  t.not(reset.after.uidvalidity, reset.before.uidvalidity);
  t.same(
    (await admin.fetchAll('alice', 'INBOX.Archive')).map((m) => m.sha256),
    archive.map((m) => m.sha256),
  );
});
