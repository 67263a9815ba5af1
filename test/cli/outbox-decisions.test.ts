/**
 * `outbox cancel` and `outbox requeue` decided by the outbox actor in a
 * service started for real, on sends the test placed at each stage.
 * NEEDS THE OUTBOX ACTOR (actors/outbox/actor.ts, started as `outbox`):
 * without it the deployment answers 503 for a send that exists.
 *
 * It proves: `Accepted` prints its sentence and exits 0; every other
 * outcome prints its sentence on standard output, "was not withdrawn" or
 * "was not requeued" on standard error, and exits 1; a Refused send is
 * requeued only with `--despite-refusal`; `--output json` prints the
 * route's answer; on a terminal a "y" confirms the requeue. Where a send
 * stands after a re-offer is the actor's (the spec does not show it; with
 * no SMTP configured it may be refused again at once), so only the outcome
 * is checked there.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { openServiceStore, seedSend, storedSend } from '../helpers/outbox.ts';
import { cli, cliHome, loginWithKey, onTerminal, startCliService } from './harness.ts';

t.setTimeout(300_000);

t.test('outbox decisions from the command line', async (t) => {
  const svc = await startCliService(t, { accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }] });
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);
  const recorded = seedSend(db, 'pat', 'Recorded');
  const claimed = seedSend(db, 'pat', 'claimed');
  const sent = seedSend(db, 'pat', 'Sent');
  const refused = seedSend(db, 'pat', 'Refused');
  const begun = seedSend(db, 'pat', 'TransmissionBegun');
  const cancelled = seedSend(db, 'pat', 'Cancelled');
  const home = cliHome(t);
  t.equal((await loginWithKey(home, svc.admin, svc.keys.operator)).code, 0);
  const run = (args: string[]) => cli(home, args);

  const withdrawn = await run(['outbox', 'cancel', '--message', recorded.outgoingEmail]);
  t.equal(withdrawn.code, 0, withdrawn.stderr);
  t.equal(withdrawn.stdout, `Send ${recorded.outgoingEmail} is withdrawn: nothing of it was transmitted, and its record stays.\n`);
  t.match(storedSend(db, recorded.id), { stage: 'Cancelled', cancelled_by: 'operator' });
  const again = await run(['outbox', 'cancel', '--message', recorded.outgoingEmail]);
  t.equal(again.code, 1);
  t.match(again.stdout, /is past the stage a withdrawal applies at \(only a Recorded send can be withdrawn\); nothing was withdrawn\./);
  t.match(again.stderr, /The send was not withdrawn \(StageDoesNotAllowIt\)\./);
  const underWay = await run(['outbox', 'cancel', '--message', claimed.outgoingEmail, '--output', 'json']);
  t.equal(underWay.code, 1);
  t.same(JSON.parse(underWay.stdout), { outgoingEmail: claimed.outgoingEmail, outcome: 'AttemptUnderWay' });

  const notRestated = await run(['outbox', 'requeue', '--message', refused.outgoingEmail, '--yes']);
  t.equal(notRestated.code, 1);
  t.match(notRestated.stdout, /was refused by the mail server; offering it again needs the refusal restated \(--despite-refusal\)\. Nothing was requeued\./);
  t.match(notRestated.stderr, /The send was not requeued \(RefusalNotRestated\)\./);
  t.equal(storedSend(db, refused.id).stage, 'Refused');
  const nothingOwed = await run(['outbox', 'requeue', '--message', sent.outgoingEmail, '--yes']);
  t.equal(nothingOwed.code, 1);
  t.match(nothingOwed.stderr, /not requeued \(StageDoesNotAllowIt\)/);
  const held = await run(['outbox', 'requeue', '--message', claimed.outgoingEmail, '--yes']);
  t.equal(held.code, 1);
  t.match(held.stdout, /An attempt to deliver send o\d+ is under way; nothing was requeued\./);
  const restated = await run(['outbox', 'requeue', '--message', refused.outgoingEmail, '--despite-refusal', '--yes']);
  t.equal(restated.code, 0, restated.stderr);
  t.match(restated.stdout, /is offered again: its attempts are given back, and the next pass offers every address not yet accepted\./);
  const json = await run(['outbox', 'requeue', '--message', cancelled.outgoingEmail, '--yes', '--output', 'json']);
  t.equal(json.code, 0, json.stderr);
  t.same(JSON.parse(json.stdout), { outgoingEmail: cancelled.outgoingEmail, outcome: 'Accepted' });

  await t.test('on a terminal, "y" requeues', { skip: spawnSync('script', ['--version']).status !== 0 && 'util-linux script is not installed' }, async (t) => {
    const confirmed = await onTerminal(home, ['outbox', 'requeue', '--message', begun.outgoingEmail], [{ after: /\[y\/N\] /, send: 'y\r' }]);
    t.equal(confirmed.code, 0, confirmed.screen);
    t.match(confirmed.screen, /is offered again/);
  });
});
