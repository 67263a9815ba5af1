/**
 * The send tools end to end: a reply's audience, subject, threading headers
 * and quote; a forward carrying the original's attachments byte for byte;
 * header injection refused; the recipient policy; send ceilings that a
 * restart does not reset; cancellation, and cancellation racing delivery.
 */
import { createHash, randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { ADMIN_KEYS, call, SENDER, settled, sleep, startOutboxed, type Json, type Outboxed } from './outbox-setup.ts';

t.setTimeout(240_000);

const attachment = randomBytes(30_000);
const sha = (b: Buffer | Uint8Array): string => createHash('sha256').update(b).digest('hex');

function original(): Buffer {
  const boundary = 'b-outbox-test';
  return Buffer.from(
    [
      'From: Quentin Original <quentin.original@example.net>',
      'Reply-To: Replies Desk <replies.desk@example.net>',
      `To: Ann Owner <${SENDER}>, Ursula Colleague <ursula.colleague@example.com>`,
      'Cc: Victor Watcher <victor.watcher@example.com>',
      'Subject: Budget planning for the winter retreat',
      'Message-ID: <winter-retreat-3@example.net>',
      'References: <winter-retreat-1@example.net> <winter-retreat-2@example.net>',
      'Date: Mon, 16 Nov 2026 09:30:00 +0000',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Please review the retreat budget before Friday.',
      `--${boundary}`,
      'Content-Type: application/pdf; name="budget.pdf"',
      'Content-Disposition: attachment; filename="budget.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      attachment.toString('base64').replace(/(.{76})/g, '$1\r\n'),
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  );
}

async function storedId(o: Outboxed): Promise<string> {
  const { value } = await call(o.agent, 'list_emails', { folders: ['inbox'] });
  return (value.emails as Json[])[0]!.storedEmailId;
}

async function deliveredOnce(o: Outboxed, address: string) {
  const deliveries = await (async () => {
    const until = Date.now() + 15_000;
    while (Date.now() < until && o.smtp.deliveriesFor(address).length === 0) await sleep(100);
    return o.smtp.deliveriesFor(address);
  })();
  return deliveries.length === 1 ? simpleParser(deliveries[0]!.raw) : null;
}

t.test('reply: audience, subject, threading headers and quote come from the stored original', async (t) => {
  const o = await startOutboxed(t, { inbox: [original()] });
  const id = await storedId(o);
  const toSender = await call(o.agent, 'reply_to_email', {
    storedEmailId: id,
    audience: 'senderOnly',
    plainTextBody: 'Reviewed, looks fine.',
    idempotencyKey: 'r1',
  });
  t.ok(toSender.ok, toSender.text);
  await settled(o.agent, toSender.value.outgoingEmailId, ['sent']);
  const reply = await deliveredOnce(o, 'replies.desk@example.net');
  t.ok(reply, 'delivered once to the Reply-To address');
  t.equal(reply!.subject, 'Re: Budget planning for the winter retreat');
  t.equal(reply!.inReplyTo, '<winter-retreat-3@example.net>');
  t.same(reply!.references, ['<winter-retreat-1@example.net>', '<winter-retreat-2@example.net>', '<winter-retreat-3@example.net>']);
  t.match(reply!.text, /^Reviewed, looks fine\.\n\nOn .+, quentin\.original@example\.net wrote:\n> Please review the retreat budget before Friday\./);
  t.same(o.smtp.deliveries.at(-1)!.recipients, ['replies.desk@example.net'], 'senderOnly: Reply-To, not From');

  const all = await call(o.agent, 'reply_to_email', {
    storedEmailId: id,
    audience: 'everyone',
    cc: ['extra.cc@example.org'],
    plainTextBody: 'Adding everyone.',
    idempotencyKey: 'r2',
  });
  const done = await settled(o.agent, all.value.outgoingEmailId, ['sent']);
  t.same(
    done.recipients.map((r: Json) => [r.address, r.header]),
    [
      ['replies.desk@example.net', 'to'],
      ['ursula.colleague@example.com', 'cc'],
      ['victor.watcher@example.com', 'cc'],
      ['extra.cc@example.org', 'cc'],
    ],
    "everyone: the sender, the original's To and Cc without this account, and the extra Cc",
  );
  const unknown = await call(o.agent, 'reply_to_email', { storedEmailId: 'ezzzzzz', audience: 'everyone', plainTextBody: 'x', idempotencyKey: 'r3' });
  t.match(unknown.text, /^Mailcairn error 53001: /);
});

t.test("forward: the original's attachments carried byte for byte", async (t) => {
  const o = await startOutboxed(t, { inbox: [original()] });
  const id = await storedId(o);
  const fwd = await call(o.agent, 'forward_email', {
    storedEmailId: id,
    to: ['forward.target@example.org'],
    plainTextBody: 'FYI, see below.',
    idempotencyKey: 'f1',
  });
  t.ok(fwd.ok, fwd.text);
  await settled(o.agent, fwd.value.outgoingEmailId, ['sent']);
  const forwarded = await deliveredOnce(o, 'forward.target@example.org');
  t.ok(forwarded);
  t.equal(forwarded!.subject, 'Fwd: Budget planning for the winter retreat');
  t.match(forwarded!.text, /FYI, see below\.[\s\S]*---------- Forwarded message ----------[\s\S]*Please review the retreat budget/);
  t.equal(forwarded!.attachments.length, 1);
  t.equal(forwarded!.attachments[0]!.filename, 'budget.pdf');
  t.equal(forwarded!.attachments[0]!.contentType, 'application/pdf');
  t.equal(sha(forwarded!.attachments[0]!.content), sha(attachment), 'the attachment is the same bytes');
});

t.test('header injection is impossible; bounds are named; the recipient policy refuses the whole message', async (t) => {
  const o = await startOutboxed(t, { outbox: { RecipientPolicy: { DeniedDomains: ['blocked.example'], DeniedAddresses: ['nope@example.org'] } } });
  const base = { account: 'ann', to: ['fine@example.org'], subject: 'Hello', plainTextBody: 'x' };
  const injected = await call(o.agent, 'send_email', { ...base, subject: 'Hello\r\nBcc: victim@example.org', idempotencyKey: 'i1' });
  t.match(injected.text, /^Mailcairn error (51001|-32602)|line breaks/, 'a line break in the subject is refused');
  const named = await call(o.agent, 'send_email', { ...base, to: ['Someone <someone@example.org>'], idempotencyKey: 'i2' });
  t.match(named.text, /^Mailcairn error 51001: every address in to must be a plain address/);
  const crlfAddress = await call(o.agent, 'send_email', { ...base, to: ['a@example.org\r\nX-Evil: 1'], idempotencyKey: 'i3' });
  t.notOk(crlfAddress.ok, 'a line break in an address is refused');
  const tooMany = await call(o.agent, 'send_email', { ...base, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`), idempotencyKey: 'i4' });
  t.notOk(tooMany.ok, 'more than 50 recipients are refused');
  const none = await call(o.agent, 'send_email', { ...base, to: [], idempotencyKey: 'i5' });
  t.match(none.text, /^Mailcairn error 51001: name at least one recipient/);
  const blocked = await call(o.agent, 'send_email', { ...base, to: ['fine@example.org'], cc: ['someone@Blocked.Example'], idempotencyKey: 'p1' });
  t.match(blocked.text, /^Mailcairn error 53002: a recipient is in a domain the sending policy denies/);
  t.notMatch(blocked.text, /someone|blocked/i, 'the refusal names the rule, not the address');
  const denied = await call(o.agent, 'send_email', { ...base, bcc: ['nope@example.org'], idempotencyKey: 'p2' });
  t.match(denied.text, /^Mailcairn error 53002: /);
  const unknownAccount = await call(o.agent, 'send_email', { ...base, account: 'bob', idempotencyKey: 'p3' });
  t.match(unknownAccount.text, /^Mailcairn error 53001: /);
  await sleep(1_500);
  t.equal(o.smtp.dataCommands, 0, 'nothing refused reached the SMTP server');
});

t.test('the contact rule: only addresses of asserted contacts may be recipients, and the refusal names the rule', async (t) => {
  const o = await startOutboxed(t, { outbox: { RecipientPolicy: { Contacts: 'Asserted' } } });
  const asserted = await fetch(`http://127.0.0.1:${o.adminPort()}/api/admin/contacts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEYS.operator}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Sato Haruki', addresses: [{ address: 'Haruki.Sato@partner.example' }] }),
  });
  t.equal(asserted.status, 201, 'the owner asserts a contact');
  const base = { account: 'ann', subject: 'Friday', plainTextBody: 'See you on Friday.' };
  const unknown = await call(o.agent, 'send_email', { ...base, to: ['haruki.sato@partner.example', 'attacker@evil.example'], idempotencyKey: 'c1' });
  t.match(
    unknown.text,
    /^Mailcairn error 53002: a recipient is not an address of an asserted contact/,
    'an address no asserted contact holds refuses the message',
  );
  t.notMatch(unknown.text, /attacker|evil|sato/i, 'the refusal names the rule, not the address');
  const known = await call(o.agent, 'send_email', { ...base, to: ['HARUKI.SATO@partner.example'], idempotencyKey: 'c2' });
  t.ok(known.ok, "an asserted contact's address, in any case, is sent");
  await settled(o.agent, known.value.outgoingEmailId as string, ['sent']);
  t.equal(o.smtp.dataCommands, 1, 'only the allowed message reached the SMTP server');
});

t.test('send ceilings hold across a restart', async (t) => {
  const o = await startOutboxed(t, { outbox: { Ceilings: { PerCaller: 2, Period: '01:00:00' } } });
  const send = (key: string) =>
    call(o.agent, 'send_email', { account: 'ann', to: ['ceiling@example.org'], subject: key, plainTextBody: 'x', idempotencyKey: key });
  t.ok((await send('c1')).ok);
  t.ok((await send('c2')).ok);
  const third = await send('c3');
  t.match(third.text, /^Mailcairn error 57001: this caller's sends for the period are spent \(Outbox:Ceilings:PerCaller\)/);
  t.ok((await send('c1')).ok, 'repeating a recorded key is no new send');
  const otherCaller = await call(o.other, 'send_email', {
    account: 'ann',
    to: ['ceiling@example.org'],
    subject: 'o',
    plainTextBody: 'x',
    idempotencyKey: 'o1',
  });
  t.ok(otherCaller.ok, 'another caller has its own allowance');
  await o.restart();
  const afterRestart = await send('c4');
  t.match(afterRestart.text, /^Mailcairn error 57001: /, 'a restart hands out no fresh allowance');
});

t.test('cancellation: only the caller, only before transmission; racing delivery, never both', async (t) => {
  const o = await startOutboxed(t, { outbox: { Enabled: false } });
  const sent = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['cancel.me@example.org'],
    subject: 'Withdraw',
    plainTextBody: 'x',
    idempotencyKey: 'k1',
  });
  const foreign = await call(o.other, 'cancel_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
  t.match(foreign.text, /^Mailcairn error 53001: /, "another caller's send is unknown to it");
  const cancelled = await call(o.agent, 'cancel_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
  t.same(cancelled.value, { outgoingEmailId: sent.value.outgoingEmailId, state: 'cancelled' });
  const again = await call(o.agent, 'cancel_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
  t.equal(again.value.state, 'cancelled', 'cancelling twice answers the same');
  const repeat = await call(o.agent, 'send_email', {
    account: 'ann',
    to: ['cancel.me@example.org'],
    subject: 'Withdraw',
    plainTextBody: 'x',
    idempotencyKey: 'k1',
  });
  t.equal(repeat.value.state, 'cancelled', 'the same key does not queue it again');
  t.end();
});

t.test('cancellation racing delivery: either cancelled and never delivered, or delivered once and too late to cancel', async (t) => {
  const o = await startOutboxed(t);
  const outcomes = { cancelled: 0, late: 0 };
  for (let i = 0; i < 20; i++) {
    const address = `race${i}@example.org`;
    const sent = await call(o.agent, 'send_email', { account: 'ann', to: [address], subject: `Race ${i}`, plainTextBody: 'x', idempotencyKey: `race-${i}` });
    if (i % 2 === 1) await sleep(i * 3);
    const cancel = await call(o.agent, 'cancel_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
    const end = await settled(o.agent, sent.value.outgoingEmailId, ['sent', 'cancelled']);
    if (cancel.ok) {
      outcomes.cancelled++;
      t.equal(end.state, 'cancelled');
    } else {
      outcomes.late++;
      t.match(cancel.text, /^Mailcairn error 58001: /);
      t.equal(end.state, 'sent');
    }
  }
  await sleep(2_000);
  for (let i = 0; i < 20; i++) {
    const got = o.smtp.deliveriesFor(`race${i}@example.org`).length;
    t.ok(got <= 1, `race ${i}: at most one delivery`);
  }
  t.equal(o.smtp.deliveries.length, outcomes.late, 'exactly the sends too late to cancel were delivered');
  t.comment(`cancelled ${outcomes.cancelled}, too late ${outcomes.late}`);
});
