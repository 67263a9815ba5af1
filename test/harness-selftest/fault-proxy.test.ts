/**
 * The fault proxy in front of a real Dovecot: forwards byte for byte, adds latency, stalls the
 * server→client direction (entirely or mid-response), cuts connections after an exact number of
 * bytes so an imapflow client sees the cut mid-FETCH, cuts everything, and refuses.
 */
import t, { type Test } from 'tap';
import type { ImapFlow } from 'imapflow';
import { startDovecot, type Dovecot } from '../harness/dovecot.ts';
import { startFaultProxy, type FaultProxy } from '../harness/fault-proxy.ts';
import { generateMailbox } from '../harness/generator.ts';
import { imapClient } from '../harness/imap-client.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { until } from '../helpers/log-capture.ts';

let dovecot: Dovecot;
t.before(async () => {
  dovecot = await startDovecot();
  await writeMaildir(dovecot, 'alice', 'INBOX', generateMailbox({ seed: 3, count: 30 }));
});
t.teardown(() => dovecot.stop());

async function setup(t: Test): Promise<{ proxy: FaultProxy; client: ImapFlow }> {
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port }, { seed: 1 });
  t.teardown(() => proxy.close());
  const client = imapClient(dovecot, 'alice', { port: proxy.port, socketTimeout: 20_000 });
  client.on('error', () => undefined);
  t.teardown(() => client.close());
  await client.connect();
  return { proxy, client };
}

/** Resolves with the value, or 'pending' if `p` has not settled within `ms`. */
async function settledWithin<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

async function fetchAllSources(client: ImapFlow): Promise<number> {
  let bytes = 0;
  for await (const m of client.fetch('1:*', { source: true })) bytes += m.source?.length ?? 0;
  return bytes;
}

t.test('forwards a whole session unchanged', async (t) => {
  const { proxy, client } = await setup(t);
  t.equal(proxy.connections, 1);
  await client.mailboxOpen('INBOX');
  const bytes = await fetchAllSources(client);
  t.ok(bytes > 30 * 500, `fetched ${bytes} bytes through the proxy`);
  t.ok(proxy.bytesToClient > bytes);
  await client.logout();
  await until(() => proxy.connections === 0, 5_000, 'connection closed');
  t.equal(proxy.accepted, 1);
});

t.test('delay adds latency to each round trip', async (t) => {
  const { proxy, client } = await setup(t);
  let start = Date.now();
  await client.noop();
  const fast = Date.now() - start;
  proxy.delay(150);
  start = Date.now();
  await client.noop();
  const slow = Date.now() - start;
  t.ok(slow >= 290, `NOOP took ${slow} ms with 150 ms each way (was ${fast} ms)`);
  proxy.delay(0);
});

t.test('stall holds server bytes until resume; the socket stays open', async (t) => {
  const { proxy, client } = await setup(t);
  proxy.stall();
  const noop = client.noop();
  t.equal(await settledWithin(noop, 500), 'pending');
  t.equal(proxy.connections, 1);
  proxy.resume();
  t.not(await settledWithin(noop, 5_000), 'pending');
});

t.test('stallAfterBytes stops mid-response', async (t) => {
  const { proxy, client } = await setup(t);
  await client.mailboxOpen('INBOX');
  const before = proxy.bytesToClient;
  proxy.stallAfterBytes(4_000);
  const fetching = fetchAllSources(client);
  t.equal(await settledWithin(fetching, 700), 'pending');
  t.equal(proxy.bytesToClient - before, 4_000, 'exactly 4000 bytes went through');
  proxy.resume();
  t.ok((await settledWithin(fetching, 10_000)) !== 'pending');
});

t.test('cutAfterBytes ends the connection mid-FETCH and the client sees it', async (t) => {
  const { proxy, client } = await setup(t);
  await client.mailboxOpen('INBOX');
  const before = proxy.bytesToClient;
  proxy.cutAfterBytes(2_500);
  await t.rejects(fetchAllSources(client));
  t.equal(proxy.bytesToClient - before, 2_500, 'cut exactly after 2500 bytes');
  t.equal(proxy.cuts, 1);
  await until(() => !client.usable, 5_000, 'client noticed');
  t.equal(proxy.connections, 0);
  // The rule stays for new connections ('all') until cleared.
  const second = imapClient(dovecot, 'alice', { port: proxy.port });
  second.on('error', () => undefined);
  t.teardown(() => second.close());
  proxy.clearCut();
  await second.connect();
  t.ok(second.usable);
});

t.test("cutAfterBytes 'next' hits only the next connection, with RST", async (t) => {
  const { proxy, client } = await setup(t);
  proxy.cutAfterBytes(10, { which: 'next', reset: true });
  const doomed = imapClient(dovecot, 'alice', { port: proxy.port });
  doomed.on('error', () => undefined);
  await t.rejects(doomed.connect());
  t.ok(client.usable, 'the open connection was spared');
  await client.noop();
  const fine = imapClient(dovecot, 'alice', { port: proxy.port });
  fine.on('error', () => undefined);
  t.teardown(() => fine.close());
  await fine.connect();
  t.ok(fine.usable, 'the one after is spared too');
});

t.test('cutAll and refuse', async (t) => {
  const { proxy, client } = await setup(t);
  proxy.cutAll();
  await until(() => !client.usable, 5_000, 'client noticed the cut');
  proxy.refuse(true);
  const refused = imapClient(dovecot, 'alice', { port: proxy.port });
  refused.on('error', () => undefined);
  await t.rejects(refused.connect());
  proxy.refuse(false);
  const ok = imapClient(dovecot, 'alice', { port: proxy.port });
  ok.on('error', () => undefined);
  t.teardown(() => ok.close());
  await ok.connect();
  t.ok(ok.usable);
  t.equal(proxy.accepted, 3);
});

t.test('Dovecot down behind the proxy: connections close instead of hanging', async (t) => {
  const proxy = await startFaultProxy({ host: '127.0.0.1', port: 1 });
  t.teardown(() => proxy.close());
  const client = imapClient(dovecot, 'alice', { port: proxy.port });
  client.on('error', () => undefined);
  await t.rejects(client.connect());
});
