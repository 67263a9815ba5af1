/**
 * Cancellation and requeue decided by the outbox actor (`outbox`, started
 * by service/system-children.ts) in a service started for real, on sends
 * the test placed at each stage (test/helpers/outbox.ts). NEEDS THE OUTBOX
 * ACTOR: without it these routes answer 503 for a send that exists.
 *
 * It proves each of the five outcomes is a 200 `{outgoingEmail, outcome}`:
 * - cancellation: a Recorded send no attempt holds is withdrawn
 *   (`Accepted`; the store holds Cancelled and the credential's name as
 *   `cancelled_by`); again, or at TransmissionBegun, Sent or Refused, it is
 *   `StageDoesNotAllowIt`; a send an attempt holds is `AttemptUnderWay`;
 *   an unknown one `RecordUnknown`;
 * - requeue: a Refused send without the refusal restated is
 *   `RefusalNotRestated` and stays Refused, restated it is `Accepted`; a
 *   send an attempt holds is `AttemptUnderWay`; a Sent send every
 *   recipient accepted has nothing to offer (`StageDoesNotAllowIt`); a
 *   Cancelled or TransmissionBegun send is offered again (`Accepted`);
 * - no recipient or subject in any log line.
 * Where a send stands after a re-offer is the actor's (the spec does not
 * show it; with no SMTP configured it may be refused again at once), so
 * only the outcome is checked there.
 */
import t from 'tap';
import { startCliService } from '../../cli/harness.ts';
import { adminCall } from '../../helpers/admin-client.ts';
import { openServiceStore, seedSend, storedSend } from '../../helpers/outbox.ts';

t.setTimeout(240_000);

t.test('outbox decisions through the outbox actor', async (t) => {
  const svc = await startCliService(t, { accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }] });
  const api = `${svc.admin}/api/admin`;
  const decide = async (route: 'cancellation' | 'requeue', body: Record<string, unknown>): Promise<unknown> => {
    const answer = await adminCall(`${api}/outbox/${route}`, { apiKey: svc.keys.operator, json: body });
    if (answer.status !== 200) throw new Error(`POST /outbox/${route} answered ${answer.status}: ${answer.body}`);
    return answer.json();
  };
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);
  const sends = {
    recorded: seedSend(db, 'pat', 'Recorded'),
    claimed: seedSend(db, 'pat', 'claimed'),
    begun: seedSend(db, 'pat', 'TransmissionBegun'),
    sent: seedSend(db, 'pat', 'Sent'),
    refused: seedSend(db, 'pat', 'Refused'),
    cancelled: seedSend(db, 'pat', 'Cancelled'),
  };
  const secrets = Object.values(sends).flatMap((s) => [s.subject, ...s.recipients]);

  await t.test('cancellation', async (t) => {
    const { recorded, claimed, begun, sent, refused } = sends;
    t.same(await decide('cancellation', { outgoingEmail: recorded.outgoingEmail }), { outgoingEmail: recorded.outgoingEmail, outcome: 'Accepted' });
    t.match(storedSend(db, recorded.id), { stage: 'Cancelled', cancelled_by: 'operator' }, 'withdrawn, by the credential that asked');
    t.same(await decide('cancellation', { outgoingEmail: recorded.outgoingEmail }), {
      outgoingEmail: recorded.outgoingEmail,
      outcome: 'StageDoesNotAllowIt',
    });
    for (const s of [begun, sent, refused]) {
      t.same(
        await decide('cancellation', { outgoingEmail: s.outgoingEmail }),
        { outgoingEmail: s.outgoingEmail, outcome: 'StageDoesNotAllowIt' },
        s.outgoingEmail,
      );
    }
    t.same(await decide('cancellation', { outgoingEmail: claimed.outgoingEmail }), { outgoingEmail: claimed.outgoingEmail, outcome: 'AttemptUnderWay' });
    t.match(storedSend(db, claimed.id), { stage: 'Recorded' }, 'an attempt holds it: not withdrawn');
    t.same(await decide('cancellation', { outgoingEmail: 'o999999' }), { outgoingEmail: 'o999999', outcome: 'RecordUnknown' });
    t.match(storedSend(db, sent.id), { stage: 'Sent' });
  });

  await t.test('requeue', async (t) => {
    const { claimed, begun, sent, refused, cancelled } = sends;
    t.same(await decide('requeue', { outgoingEmail: refused.outgoingEmail }), { outgoingEmail: refused.outgoingEmail, outcome: 'RefusalNotRestated' });
    t.same(await decide('requeue', { outgoingEmail: refused.outgoingEmail, refusalRestated: false }), {
      outgoingEmail: refused.outgoingEmail,
      outcome: 'RefusalNotRestated',
    });
    t.match(storedSend(db, refused.id), { stage: 'Refused' }, 'not restated: nothing changed');
    t.same(await decide('requeue', { outgoingEmail: claimed.outgoingEmail }), { outgoingEmail: claimed.outgoingEmail, outcome: 'AttemptUnderWay' });
    t.same(await decide('requeue', { outgoingEmail: sent.outgoingEmail }), { outgoingEmail: sent.outgoingEmail, outcome: 'StageDoesNotAllowIt' });
    t.match(storedSend(db, sent.id), { stage: 'Sent' }, 'nothing left to offer');
    t.same(await decide('requeue', { outgoingEmail: refused.outgoingEmail, refusalRestated: true }), {
      outgoingEmail: refused.outgoingEmail,
      outcome: 'Accepted',
    });
    t.same(await decide('requeue', { outgoingEmail: cancelled.outgoingEmail }), { outgoingEmail: cancelled.outgoingEmail, outcome: 'Accepted' });
    t.same(await decide('requeue', { outgoingEmail: begun.outgoingEmail }), { outgoingEmail: begun.outgoingEmail, outcome: 'Accepted' });
    t.same(await decide('requeue', { outgoingEmail: 'o999999', refusalRestated: true }), { outgoingEmail: 'o999999', outcome: 'RecordUnknown' });
  });

  const logged = svc.logs.raw();
  t.same(
    secrets.filter((s) => logged.includes(s)),
    [],
    'no recipient or subject in any log line',
  );
});
