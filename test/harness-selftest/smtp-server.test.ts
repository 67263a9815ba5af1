/**
 * The harness SMTP server, spoken to by nodemailer's real SMTP client: it records exactly what it
 * accepted over STARTTLS+AUTH, implicit TLS and XOAUTH2, refuses bad credentials, recipients and
 * oversized messages with the codes it is told, cuts or stalls a DATA phase after 354, and stops
 * and starts again on the same port. Every client has short timeouts, so no test can hang.
 */
import { connect } from 'node:net';
import nodemailer, { type NodemailerError, type SMTPTransportOptions } from 'nodemailer';
import t, { type Test } from 'tap';
import { startSmtpServer, type SmtpServerOptions, type SmtpSink } from '../harness/smtp-server.ts';
import { until } from '../helpers/log-capture.ts';
import { reservePort } from '../helpers/ports.ts';

const ALICE = { username: 'alice', password: 'alice-password' };

async function started(t: Test, options: SmtpServerOptions): Promise<SmtpSink> {
  const sink = await startSmtpServer(options);
  t.teardown(() => sink.stop());
  return sink;
}

type ClientOptions = { auth?: SMTPTransportOptions['auth']; socketTimeout?: number; ignoreTLS?: boolean };

function client(t: Test, sink: SmtpSink, o: ClientOptions = {}) {
  const transport = nodemailer.createTransport({
    host: sink.host,
    port: sink.port,
    secure: sink.security === 'Tls',
    requireTLS: sink.security === 'StartTls' && !o.ignoreTLS,
    ignoreTLS: o.ignoreTLS ?? false,
    ...(sink.certificatePem ? { tls: { ca: sink.certificatePem } } : {}),
    auth: o.auth,
    connectionTimeout: 3_000,
    greetingTimeout: 3_000,
    socketTimeout: o.socketTimeout ?? 5_000,
  });
  t.teardown(() => transport.close());
  return transport;
}

/** A CRLF message with a line that starts with a dot (stuffed on the wire, unstuffed in `raw`). */
function message(subject: string, bodyBytes = 0): Buffer {
  const head = `From: a@example.test\r\nTo: b@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@example.test>\r\n\r\n`;
  const filler = bodyBytes > 0 ? `${'x'.repeat(76)}\r\n`.repeat(Math.ceil(bodyBytes / 78)) : '';
  return Buffer.from(`${head}Hello.\r\n.leading dot\r\n..two dots\r\n${filler}Bye.\r\n`);
}

function send(transport: ReturnType<typeof client>, raw: Buffer, to = ['b@example.test'], from = 'a@example.test') {
  return transport.sendMail({ envelope: { from, to }, raw });
}

/** The error a promise rejected with (fails the test if it resolved). */
async function failure(t: Test, p: Promise<unknown>): Promise<NodemailerError> {
  try {
    await p;
  } catch (err) {
    return err as NodemailerError;
  }
  t.fail('expected a failure');
  return new Error('resolved');
}

/** What the server says to EHLO, read over a plain socket. */
function ehlo(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let text = '';
    let sent = false;
    s.setTimeout(3_000, () => {
      s.destroy();
      reject(new Error(`no EHLO reply: ${text}`));
    });
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (!sent && text.includes('\r\n')) {
        sent = true;
        text = '';
        s.write('EHLO client.test\r\n');
      } else if (sent && /^250 .*\r\n/m.test(text)) {
        s.end('QUIT\r\n');
        resolve(text);
      }
    });
  });
}

t.test('StartTls with AUTH: the exact bytes and envelope are recorded', async (t) => {
  const sink = await started(t, { security: 'StartTls', auth: ALICE });
  const transport = client(t, sink, { auth: { user: 'alice', pass: 'alice-password' } });
  const raw = message('starttls');
  const info = await send(transport, raw, ['b@example.test', 'c@example.test']);
  t.match(info.response, /^250 /);
  t.same(info.accepted, ['b@example.test', 'c@example.test']);
  t.equal(sink.deliveries.length, 1);
  const d = sink.deliveries[0]!;
  t.ok(d.raw.equals(raw), 'raw is byte for byte what was sent');
  t.equal(d.envelopeFrom, 'a@example.test');
  t.same(d.recipients, ['b@example.test', 'c@example.test']);
  t.equal(d.authenticatedUser, 'alice');
  t.ok(d.receivedAt instanceof Date);
  t.equal(sink.deliveriesFor('C@Example.test').length, 1);
  t.equal(sink.deliveriesFor('z@example.test').length, 0);
  t.equal(sink.connections, 1);
  t.equal(sink.dataCommands, 1);
});

t.test('StartTls refuses AUTH before STARTTLS, and MAIL before AUTH', async (t) => {
  const sink = await started(t, { security: 'StartTls', auth: ALICE });
  t.match(await ehlo(sink.port), /STARTTLS/);
  const plain = await failure(t, send(client(t, sink, { auth: { user: 'alice', pass: 'alice-password' }, ignoreTLS: true }), message('plain')));
  t.equal(plain.responseCode, 538, plain.message);
  const anonymous = await failure(t, send(client(t, sink), message('anonymous')));
  t.equal(anonymous.responseCode, 530, anonymous.message);
  t.equal(sink.deliveries.length, 0);
});

t.test('Tls: implicit TLS delivers', async (t) => {
  const sink = await started(t, { security: 'Tls', auth: ALICE });
  const raw = message('implicit');
  await send(client(t, sink, { auth: { user: 'alice', pass: 'alice-password' } }), raw);
  const [d] = await sink.waitForDeliveries(1, 2_000);
  t.ok(d!.raw.equals(raw));
  t.equal(d!.authenticatedUser, 'alice');
});

t.test('a wrong password is refused with 535', async (t) => {
  const sink = await started(t, { security: 'StartTls', auth: ALICE });
  const err = await failure(t, send(client(t, sink, { auth: { user: 'alice', pass: 'wrong' } }), message('wrong')));
  t.equal(err.responseCode, 535, err.message);
  t.equal(err.code, 'EAUTH');
  t.equal(sink.deliveries.length, 0);
});

t.test('XOAUTH2 is accepted when the callback says so', async (t) => {
  const sink = await started(t, { security: 'Tls', xoauth2: (user, token) => user === 'alice' && token === 'good-token' });
  const oauth = (accessToken: string): SMTPTransportOptions['auth'] => ({ type: 'OAuth2', user: 'alice', accessToken });
  await send(client(t, sink, { auth: oauth('good-token') }), message('xoauth2'));
  t.equal(sink.deliveries[0]?.authenticatedUser, 'alice');
  const err = await failure(t, send(client(t, sink, { auth: oauth('bad-token') }), message('xoauth2-bad')));
  t.equal(err.code, 'EAUTH', err.message);
  t.equal(sink.deliveries.length, 1);
});

t.test('rcpt: 550 for one recipient, the others delivered', async (t) => {
  const sink = await started(t, { security: 'None', rcpt: (a) => (a === 'gone@example.test' ? { code: 550, message: '5.1.1 No such user' } : 'accept') });
  const info = await send(client(t, sink), message('partial'), ['b@example.test', 'gone@example.test', 'c@example.test']);
  t.same(info.rejected, ['gone@example.test']);
  t.same(info.accepted, ['b@example.test', 'c@example.test']);
  t.match(String(info.rejectedErrors?.[0]?.response), /^550 .*No such user/);
  t.same(sink.deliveries[0]?.recipients, ['b@example.test', 'c@example.test']);
  t.equal(sink.refusedRecipients, 1);
});

t.test('rcpt: 450 refuses for now; switching the control mid-test accepts', async (t) => {
  const sink = await started(t, { security: 'None', rcpt: () => ({ code: 450 }) });
  const transport = client(t, sink);
  const err = await failure(t, send(transport, message('later')));
  t.equal(err.responseCode, 450, err.message);
  t.equal(err.code, 'EENVELOPE');
  t.equal(err.permanent, false);
  t.equal(sink.deliveries.length, 0);
  sink.rcpt = () => 'accept';
  await send(transport, message('later'));
  t.equal(sink.deliveries.length, 1);
});

t.test('data: a refusal code after the message is in, then accept', async (t) => {
  const seen: number[] = [];
  const sink = await started(t, {
    security: 'None',
    data: (tx) => {
      seen.push(tx.dataCommand);
      return tx.dataCommand === 1 ? { code: 554, message: '5.7.1 Spam' } : 'accept';
    },
  });
  const transport = client(t, sink);
  const err = await failure(t, send(transport, message('refused')));
  t.equal(err.responseCode, 554, err.message);
  t.equal(sink.deliveries.length, 0);
  await send(transport, message('accepted'));
  t.same(seen, [1, 2]);
  t.equal(sink.deliveries.length, 1);
});

t.test('acceptAfterMs: the message is kept once whole and 250 comes after the delay, heard or not', async (t) => {
  const sink = await started(t, { security: 'None', data: (tx) => ({ acceptAfterMs: tx.dataCommand === 1 ? 300 : 3_000 }) });
  const start = Date.now();
  await send(client(t, sink), message('slow'));
  t.ok(Date.now() - start >= 290, `answered after ${Date.now() - start} ms`);
  t.equal(sink.deliveries.length, 1);
  // A client that gives up before the answer: the message was delivered all the same.
  const err = await failure(t, send(client(t, sink, { socketTimeout: 800 }), message('unheard')));
  t.equal(err.code, 'ETIMEDOUT', `${err.code}: ${err.message}`);
  t.same(
    sink.deliveries.map((d) => /Subject: (\w+)/.exec(d.raw.toString())?.[1]),
    ['slow', 'unheard'],
  );
  // keptAt 'answer': a client gone before the 250 leaves nothing; one still there gets its message kept.
  sink.data = (tx) => ({ acceptAfterMs: tx.dataCommand === 3 ? 3_000 : 300, keptAt: 'answer' });
  await failure(t, send(client(t, sink, { socketTimeout: 800 }), message('gone')));
  await send(client(t, sink), message('there'));
  await new Promise((r) => setTimeout(r, 2_500));
  t.same(
    sink.deliveries.map((d) => /Subject: (\w+)/.exec(d.raw.toString())?.[1]),
    ['slow', 'unheard', 'there'],
  );
});

t.test('drop-mid-data: the socket dies after 354 with part of the body in, no reply, no delivery', async (t) => {
  const sink = await started(t, { security: 'StartTls', auth: ALICE, data: () => 'drop-mid-data' });
  const raw = message('dropped', 4 << 20);
  const err = await failure(t, send(client(t, sink, { auth: { user: 'alice', pass: 'alice-password' } }), raw));
  // A clean close after the whole body reads ECONNECTION; a cut while the client still writes, ESOCKET (ECONNRESET).
  t.match(err.code, /^(ECONNECTION|ESOCKET)$/, `${err.code}: ${err.message} (command ${err.command})`);
  t.equal(sink.deliveries.length, 0);
  t.equal(sink.dataCommands, 1);
  t.equal(sink.interrupted.length, 1);
  const cut = sink.interrupted[0]!;
  t.equal(cut.fault, 'drop-mid-data');
  t.ok(cut.bytesReceived > 0 && cut.bytesReceived < raw.length, `${cut.bytesReceived} of ${raw.length} bytes arrived`);
});

t.test('stall-mid-data: the body is read and never answered; the client times out', async (t) => {
  const sink = await started(t, { security: 'None', data: () => 'stall-mid-data' });
  const raw = message('stalled', 10_000);
  const start = Date.now();
  const err = await failure(t, send(client(t, sink, { socketTimeout: 1_500 }), raw));
  t.equal(err.code, 'ETIMEDOUT', `${err.code}: ${err.message}`);
  t.ok(Date.now() - start < 5_000);
  t.equal(sink.deliveries.length, 0);
  t.same(
    sink.interrupted.map((i) => [i.fault, i.bytesReceived]),
    [['stall-mid-data', raw.length]],
  );
});

t.test('stop() closes open connections at once', async (t) => {
  const sink = await started(t, { security: 'None', data: () => 'stall-mid-data' });
  const pending = send(client(t, sink, { socketTimeout: 30_000 }), message('held'));
  pending.catch(() => undefined);
  await until(() => sink.interrupted.length === 1, 3_000, 'the message is in');
  const start = Date.now();
  await sink.stop();
  t.ok(Date.now() - start < 500, `stopped in ${Date.now() - start} ms`);
  const err = await failure(t, pending);
  t.match(err.code, /^(ECONNECTION|ESOCKET)$/, err.message);
});

t.test('stop() then start() on the same port', async (t) => {
  const port = await reservePort();
  const sink = await started(t, { security: 'StartTls', auth: ALICE, port });
  t.equal(sink.port, port);
  const transport = client(t, sink, { auth: { user: 'alice', pass: 'alice-password' } });
  await sink.stop();
  t.notOk(sink.listening);
  const err = await failure(t, send(transport, message('down')));
  // nodemailer's code for a refused connection is ESOCKET (command CONN); the errno is originalCode.
  t.equal(err.code, 'ESOCKET', err.message);
  t.equal(err.originalCode, 'ECONNREFUSED');
  await sink.start();
  t.ok(sink.listening);
  await send(transport, message('up'));
  t.equal(sink.deliveries.length, 1);
  await t.rejects(sink.start(), /already listening/);
});

t.test('SIZE is advertised and a larger message is refused with 552', async (t) => {
  const sink = await started(t, { security: 'None', size: 20_000 });
  t.match(await ehlo(sink.port), /^250[- ]SIZE 20000\r$/m);
  const transport = client(t, sink);
  const err = await failure(t, send(transport, message('large', 30_000)));
  t.equal(err.responseCode, 552, err.message);
  t.equal(sink.deliveries.length, 0);
  await send(transport, message('small', 1_000));
  t.equal(sink.deliveries.length, 1);
});

t.test('a plain server makes no certificate (the demo needs no openssl); a TLS one does', async (t) => {
  const plain = await started(t, { security: 'None' });
  t.equal(plain.certificatePem, null);
  t.equal(plain.certificateFile, null);
  const tls = await started(t, { security: 'Tls' });
  t.match(tls.certificatePem, /BEGIN CERTIFICATE/);
});

t.test('waitForDeliveries resolves on arrival and rejects after its timeout', async (t) => {
  const sink = await started(t, { security: 'None' });
  await t.rejects(sink.waitForDeliveries(1, 100), /0 of 1 deliveries after 100 ms/);
  const waiting = sink.waitForDeliveries(2, 3_000);
  const transport = client(t, sink);
  await send(transport, message('one'));
  await send(transport, message('two'));
  t.equal((await waiting).length, 2);
});

t.test('the server writes nothing to the console', async (t) => {
  const written: string[] = [];
  const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
  const original = methods.map((m) => console[m]);
  for (const m of methods) console[m] = (...args: unknown[]) => void written.push(args.map(String).join(' '));
  try {
    const sink = await startSmtpServer({ security: 'StartTls', auth: ALICE, rcpt: (a) => (a.startsWith('x') ? { code: 550 } : 'accept') });
    await send(client(t, sink, { auth: { user: 'alice', pass: 'alice-password' } }), message('quiet'), ['quiet-recipient@example.test', 'x@example.test']);
    await sink.stop();
  } finally {
    methods.forEach((m, i) => {
      console[m] = original[i]!;
    });
  }
  t.same(written, []);
});
