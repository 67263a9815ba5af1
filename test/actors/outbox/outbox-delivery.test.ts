/**
 * Delivery through a real SMTP server (smtp-server on loopback, STARTTLS and
 * AUTH): exactly once with the right envelope, headers and body; the
 * caller's idempotency key; a 4xx retried, a 5xx for one recipient refused
 * while the others are delivered once; a connection cut mid-DATA and a
 * server stalled past SendTimeout left TransmissionBegun and never retried;
 * an SMTP server down for a while; and no recipient, subject or body in any
 * log line.
 */
import { simpleParser } from 'mailparser';
import t from 'tap';
import { adminCall } from '../../helpers/admin-client.ts';
import { ADMIN_KEYS, call, SENDER, settled, sleep, startOutboxed } from './outbox-setup.ts';

t.setTimeout(240_000);

const BODY = 'The quarterly figures are attached below, Zephyrine.';
const SUBJECT = 'Quarterly figures for Zephyrine Okonkwo';

t.test('a send is delivered exactly once with its envelope, headers and body; the same key answers the same record', async (t) => {
  const o = await startOutboxed(t);
  const args = {
    account: 'ann',
    to: ['zephyrine.okonkwo@example.net'],
    cc: ['bartholomew.cc@example.com'],
    bcc: ['hidden.bcc@example.org'],
    subject: SUBJECT,
    plainTextBody: BODY,
    htmlBody: `<p>${BODY}</p>`,
    idempotencyKey: 'first-send',
  };
  const sent = await call(o.agent, 'send_email', args);
  t.ok(sent.ok, sent.text);
  t.match(sent.value, { outgoingEmailId: /^o\d+$/, accountId: 'ann', state: /^(queued|sending|sent)$/, recipientCount: 3 });
  t.ok(!Number.isNaN(Date.parse(sent.value.queuedAt)), 'queuedAt is an instant');

  const done = await settled(o.agent, sent.value.outgoingEmailId, ['sent']);
  t.equal(done.attemptCount, 1);
  t.same(
    done.recipients.map((r: any) => [r.address, r.header, r.state, r.replyCode]),
    [
      ['zephyrine.okonkwo@example.net', 'to', 'accepted', 250],
      ['bartholomew.cc@example.com', 'cc', 'accepted', 250],
      ['hidden.bcc@example.org', 'bcc', 'accepted', 250],
    ],
  );
  await o.smtp.waitForDeliveries(1, 5_000);
  const [delivery] = o.smtp.deliveries;
  t.equal(delivery!.envelopeFrom, SENDER, 'the envelope sender is the account');
  t.same(delivery!.recipients, ['zephyrine.okonkwo@example.net', 'bartholomew.cc@example.com', 'hidden.bcc@example.org']);
  t.equal(delivery!.authenticatedUser, 'ann-smtp', 'logged in with the configured login');
  const parsed = await simpleParser(delivery!.raw);
  t.equal(parsed.subject, SUBJECT);
  t.equal(parsed.from?.text, SENDER);
  t.match(parsed.to, { text: 'zephyrine.okonkwo@example.net' });
  t.match(parsed.cc, { text: 'bartholomew.cc@example.com' });
  t.equal(parsed.bcc, undefined, 'Bcc is in no header');
  t.notOk(delivery!.raw.toString('latin1').includes('hidden.bcc'), 'the bcc address is nowhere in the message');
  t.equal(parsed.text?.trim(), BODY);
  t.match(parsed.html, BODY);
  t.match(parsed.messageId, /^<[^@]+@example\.org>$/, 'a Message-ID minted in the sender domain');

  const again = await call(o.agent, 'send_email', args);
  t.equal(again.value.outgoingEmailId, sent.value.outgoingEmailId, 'the same key answers the same record');
  t.equal(again.value.state, 'sent');
  const other = await call(o.agent, 'send_email', { ...args, subject: 'Another message' });
  t.notOk(other.ok);
  t.match(other.text, /^Mailcairn error 51005: /, 'the same key for another message is refused');
  const otherCaller = await call(o.other, 'send_email', args);
  t.ok(otherCaller.ok);
  t.not(otherCaller.value.outgoingEmailId, sent.value.outgoingEmailId, "a key is the caller's own");
  const theirs = await call(o.other, 'get_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
  t.match(theirs.text, /^Mailcairn error 53001: /, "another caller's send reads as unknown");
  await o.smtp.waitForDeliveries(2, 10_000);
  await sleep(1_500);
  t.equal(o.smtp.deliveries.length, 2, 'one delivery per record, never one per call');

  const logged = o.sync.logs.raw();
  for (const secret of ['zephyrine', 'Zephyrine', 'bartholomew', 'hidden.bcc', 'Quarterly figures', 'attached below', SMTP_SECRET])
    t.notOk(logged.includes(secret), `no log line holds ${secret}`);
});

const SMTP_SECRET = 'smtp-secret-pw';

t.test('a 4xx is retried and delivered once; a 5xx refuses that recipient while the others are delivered once', async (t) => {
  const o = await startOutboxed(t);
  let deferrals = 0;
  o.smtp.rcpt = (address) => {
    if (address.startsWith('gone')) return { code: 550, message: 'No such user' };
    if (address.startsWith('busy') && deferrals++ < 1) return { code: 450, message: 'Mailbox busy, try later' };
    return 'accept';
  };
  const busy = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['busy.one@example.net'],
    subject: 'Deferred once',
    plainTextBody: 'x',
    idempotencyKey: 'busy',
  });
  const mixed = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['gone.one@example.net', 'present.one@example.net'],
    cc: ['present.two@example.net'],
    subject: 'Mixed',
    plainTextBody: 'y',
    idempotencyKey: 'mixed',
  });
  const busyDone = await settled(o.agent, busy.value.outgoingEmailId, ['sent']);
  t.equal(busyDone.attemptCount, 2, 'one deferral, one delivery');
  t.equal(o.smtp.deliveriesFor('busy.one@example.net').length, 1, 'delivered exactly once');
  const mixedDone = await settled(o.agent, mixed.value.outgoingEmailId, ['sent']);
  t.same(
    mixedDone.recipients.map((r: any) => [r.address, r.state, r.replyCode]),
    [
      ['gone.one@example.net', 'refused', 550],
      ['present.one@example.net', 'accepted', 250],
      ['present.two@example.net', 'accepted', 250],
    ],
  );
  t.equal(mixedDone.failureCode, 'recipient-refused');
  await sleep(2_500);
  t.equal(o.smtp.deliveriesFor('present.one@example.net').length, 1, 'the accepted recipients got it once');
  t.equal(o.smtp.deliveriesFor('gone.one@example.net').length, 0);

  // Every recipient refused for good: the send is Refused at once.
  const refused = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['gone.two@example.net'],
    subject: 'Nobody',
    plainTextBody: 'z',
    idempotencyKey: 'nobody',
  });
  const refusedDone = await settled(o.agent, refused.value.outgoingEmailId, ['refused']);
  t.equal(refusedDone.attemptCount, 1, 'a 5xx is not retried');

  // The operator re-offers it once the address exists: only with the refusal restated.
  o.smtp.rcpt = () => 'accept';
  const requeue = (json: object) =>
    adminCall(`http://127.0.0.1:${o.adminPort()}/api/admin/outbox/requeue`, {
      apiKey: ADMIN_KEYS.operator,
      json: { outgoingEmail: refused.value.outgoingEmailId, ...json },
    });
  const unstated = await requeue({});
  t.same(unstated.json(), { outgoingEmail: refused.value.outgoingEmailId, outcome: 'RefusalNotRestated' });
  await sleep(1_500);
  t.equal(o.smtp.deliveriesFor('gone.two@example.net').length, 0, 'nothing re-offered without the restated refusal');
  const restated = await requeue({ refusalRestated: true });
  t.same(restated.json(), { outgoingEmail: refused.value.outgoingEmailId, outcome: 'Accepted' });
  const reoffered = await settled(o.agent, refused.value.outgoingEmailId, ['sent']);
  t.equal(reoffered.attemptCount, 1, 'the attempts were given back');
  t.equal(o.smtp.deliveriesFor('gone.two@example.net').length, 1, 'delivered once');
  const sentAgain = await requeue({ refusalRestated: true });
  t.equal(sentAgain.json().outcome, 'StageDoesNotAllowIt', 'a Sent send with nobody left to offer is not re-offered');
});

t.test('a connection cut mid-DATA and a server stalled past SendTimeout stay TransmissionBegun and are never retried', async (t) => {
  const o = await startOutboxed(t);
  o.smtp.data = (tx) => (tx.dataCommand === 1 ? 'drop-mid-data' : tx.dataCommand === 2 ? 'stall-mid-data' : 'accept');
  const big = 'Long body line for a cut while the client writes.\n'.repeat(3_500);
  const cut = await call(o.agent, 'send_email', { account: 'ann', to: ['cut.one@example.net'], subject: 'Cut', plainTextBody: big, idempotencyKey: 'cut' });
  const cutState = await settled(o.agent, cut.value.outgoingEmailId, ['sending', 'sent', 'refused']);
  await sleep(1_000);
  const stalled = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['stall.one@example.net'],
    subject: 'Stall',
    plainTextBody: 'short',
    idempotencyKey: 'stall',
  });
  // SendTimeout is 3 s; give it that and several retry delays more.
  await sleep(9_000);
  const cutAfter = await call(o.agent, 'get_outgoing_email', { outgoingEmailId: cut.value.outgoingEmailId });
  const stallAfter = await call(o.agent, 'get_outgoing_email', { outgoingEmailId: stalled.value.outgoingEmailId });
  t.equal(cutState.state, 'sending');
  for (const [name, view] of [
    ['cut', cutAfter.value],
    ['stalled', stallAfter.value],
  ] as const) {
    t.equal(view.state, 'sending', `${name}: delivery unknown, waiting for the operator`);
    t.equal(view.attemptCount, 1, `${name}: never retried`);
    t.equal(view.recipients[0].state, 'pending');
  }
  t.equal(o.smtp.dataCommands, 2, 'no third DATA: nothing retried by itself');
  t.equal(o.smtp.deliveries.length, 0);
  t.equal(cutAfter.value.failureCode, 'server-unreachable');
  t.equal(stallAfter.value.failureCode, 'server-unresponsive');
});

t.test('the outbox waits out an SMTP server that is down, and delivers when it returns', async (t) => {
  const o = await startOutboxed(t, { outbox: { MaxAttempts: 50 } });
  await o.smtp.stop();
  const sent = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['patient.one@example.net'],
    subject: 'Later',
    plainTextBody: 'w',
    idempotencyKey: 'down',
  });
  await sleep(4_000);
  const waiting = await call(o.agent, 'get_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
  t.equal(waiting.value.state, 'queued', 'recorded and waiting');
  t.ok(waiting.value.attemptCount >= 2, 'attempts were made');
  t.equal(waiting.value.failureCode, 'server-unreachable');
  await o.smtp.start();
  const done = await settled(o.agent, sent.value.outgoingEmailId, ['sent'], 60_000);
  t.equal(done.state, 'sent');
  t.equal(o.smtp.deliveries.length, 1, 'delivered once');
});

t.test("the server's SIZE is respected: a larger message is refused before anything is sent", async (t) => {
  const o = await startOutboxed(t, { smtp: { size: 4_000 } });
  const big = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['big@example.net'],
    subject: 'Big',
    plainTextBody: 'x'.repeat(10_000),
    idempotencyKey: 'big',
  });
  const small = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['small@example.net'],
    subject: 'Small',
    plainTextBody: 'fits',
    idempotencyKey: 'small',
  });
  const refused = await settled(o.agent, big.value.outgoingEmailId, ['refused']);
  t.equal(refused.failureCode, 'too-large');
  t.equal(refused.attemptCount, 1, 'not retried');
  await settled(o.agent, small.value.outgoingEmailId, ['sent']);
  t.equal(o.smtp.dataCommands, 1, 'only the message that fits went to DATA');
});

t.test('sends to one account reuse open sessions; a session that died while idle is replaced without failing the send', async (t) => {
  const o = await startOutboxed(t, { outbox: { MaxAttempts: 50 } });
  const before = o.smtp.connections;
  const first = [];
  for (let i = 0; i < 12; i++)
    first.push(
      await call(o.agent, 'send_email', {
        account: 'ann',
        to: [`reuse.${i}@example.net`],
        subject: 'Reuse',
        plainTextBody: `r${i}`,
        idempotencyKey: `reuse-${i}`,
      }),
    );
  for (const sent of first) t.equal((await settled(o.agent, sent.value.outgoingEmailId, ['sent'])).attemptCount, 1);
  const used = o.smtp.connections - before;
  t.ok(used < first.length, `fewer connections (${used}) than sends (${first.length})`);

  // The server goes away and comes back while sessions are idle: the next sends go out on new sessions, at their first attempt.
  await o.smtp.stop();
  await o.smtp.start();
  const after = [];
  for (let i = 0; i < 3; i++)
    after.push(
      await call(o.agent, 'send_email', {
        account: 'ann',
        to: [`again.${i}@example.net`],
        subject: 'Again',
        plainTextBody: `a${i}`,
        idempotencyKey: `again-${i}`,
      }),
    );
  for (const sent of after) {
    const done = await settled(o.agent, sent.value.outgoingEmailId, ['sent']);
    t.equal(done.attemptCount, 1, 'not counted as failed because of a dead idle session');
    t.equal(done.failureCode, null);
  }
  await sleep(1_000);
  t.equal(o.smtp.deliveries.length, first.length + after.length, 'each delivered once');
});
