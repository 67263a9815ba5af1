/**
 * The harness Dovecot: starts on a run-time port, advertises what the sync needs, serves
 * SPECIAL-USE folders, IDLE, TLS and STARTTLS, restarts on the same port, and is really gone
 * (by PID) after stop.
 */
import { existsSync } from 'node:fs';
import t, { type Test } from 'tap';
import { startDovecot, type Dovecot } from '../harness/dovecot.ts';
import { imapClient, withImap } from '../harness/imap-client.ts';
import { saveMessage } from '../harness/place-mail.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function started(t: Test, options?: Parameters<typeof startDovecot>[0]): Promise<Dovecot> {
  const d = await startDovecot(options);
  t.teardown(() => d.stop());
  return d;
}

t.test('starts on a loopback port, stops by PID, and is gone afterwards', async (t) => {
  const d = await startDovecot();
  t.equal(d.host, '127.0.0.1');
  t.ok(d.port > 0);
  t.ok(alive(d.pid), 'master runs');
  t.ok(existsSync(d.configFile));
  const pid = d.pid;
  await d.stop();
  t.notOk(alive(pid), 'master gone after stop');
  t.notOk(existsSync(d.dir), 'temporary directory removed');
  await d.stop(); // idempotent
  t.pass('second stop is a no-op');
});

t.test('two instances run side by side on different ports', async (t) => {
  const [a, b] = await Promise.all([started(t), started(t)]);
  t.not(a.port, b.port);
  t.not(a.dir, b.dir);
  t.not(a.pid, b.pid);
});

t.test('CAPABILITY after login has CONDSTORE, QRESYNC, IDLE, SPECIAL-USE; folders carry their flags', async (t) => {
  const d = await started(t);
  await withImap(d, 'alice', async (c) => {
    for (const cap of ['CONDSTORE', 'QRESYNC', 'IDLE', 'SPECIAL-USE', 'UIDPLUS', 'MOVE', 'ENABLE']) t.ok(c.capabilities.has(cap), cap);
    const list = await c.list();
    const uses = Object.fromEntries(list.map((m) => [m.path, m.specialUse ?? null]));
    t.same(uses, { INBOX: '\\Inbox', Drafts: '\\Drafts', Sent: '\\Sent', Trash: '\\Trash', Archive: '\\Archive', Junk: '\\Junk' });
  });
});

t.test('wrong password is refused; users can be added at run time', async (t) => {
  const d = await started(t, { users: [{ user: 'bob@example.org', password: 'pw-bob' }] });
  const bad = imapClient({ ...d, users: [{ user: 'bob@example.org', password: 'nope' }] }, 'bob@example.org');
  bad.on('error', () => undefined);
  await t.rejects(bad.connect());
  d.addUser({ user: 'carol', password: 'pw-carol' });
  await withImap(d, 'carol', async (c) => t.ok(c.authenticated));
});

t.test('IDLE sees a message delivered behind its back', async (t) => {
  const d = await started(t);
  const client = imapClient(d, 'alice');
  client.on('error', () => undefined);
  await client.connect();
  t.teardown(() => client.close());
  await client.mailboxOpen('INBOX');
  const seen = new Promise<number>((resolve) => client.on('exists', (e: { count: number }) => resolve(e.count)));
  void client.idle();
  await new Promise((r) => setTimeout(r, 200));
  await saveMessage(d, 'alice', 'INBOX', 'Subject: hello\r\n\r\nbody\r\n');
  const count = await Promise.race([seen, new Promise<number>((_, reject) => setTimeout(() => reject(new Error('no EXISTS within 10 s')), 10_000))]);
  t.equal(count, 1);
});

t.test('TLS: implicit TLS port and STARTTLS both verify against the generated certificate', async (t) => {
  const d = await started(t, { tls: true });
  t.ok(d.tlsPort && d.tlsPort !== d.port);
  t.match(d.certificate, /BEGIN CERTIFICATE/);
  await withImap(d, 'alice', async (c) => t.ok(c.secureConnection, 'implicit TLS'), { tls: true });
  await withImap(d, 'alice', async (c) => t.ok(c.secureConnection, 'upgraded with STARTTLS'), { starttls: true });
  await withImap(d, 'alice', async (c) => t.notOk(c.secureConnection, 'plaintext still allowed'));
});

t.test('restart keeps the port and the mail; a new PID', async (t) => {
  const d = await started(t);
  await saveMessage(d, 'alice', 'INBOX', 'Subject: kept\r\n\r\nbody\r\n');
  const { port, pid } = d;
  await d.restart();
  t.equal(d.port, port);
  t.not(d.pid, pid);
  t.notOk(alive(pid), 'old master gone');
  const status = await withImap(d, 'alice', (c) => c.status('INBOX', { messages: true }));
  t.equal(status === false ? false : status.messages, 1);
});

t.test('extraConfig is appended and overrides', async (t) => {
  const d = await started(t, { extraConfig: 'imap_capability = +XMAILCAIRNTEST' });
  await withImap(d, 'alice', async (c) => t.ok(c.capabilities.has('XMAILCAIRNTEST')));
});
