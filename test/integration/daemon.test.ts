/**
 * The real `mailcairnd` process: starts with a configuration, reports ready
 * on the health listener, stops cleanly on SIGTERM, exits at once on a second
 * signal, refuses a bad configuration and a second process on one database.
 */
import { join } from 'node:path';
import t from 'tap';
import { until } from '../helpers/log-capture.ts';
import { listenerPort, spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';

async function get(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** Wait until the daemon's health listener (configured with port 0) answers ready; returns its port. */
async function waitReady(daemon: Parameters<typeof listenerPort>[0]): Promise<number> {
  const port = await listenerPort(daemon, 'HealthEndpoints');
  let gone = false;
  void daemon.exited.then(() => (gone = true));
  for (const end = Date.now() + 30_000; Date.now() < end && !gone; ) {
    try {
      if ((await get(port, '/readyz')).status === 200) return port;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the service did not become ready');
}

t.test('starts, answers health, and stops cleanly on SIGTERM', async (t) => {
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'data', 'mailcairn.db') } });
  const daemon = spawnDaemon(['--config', config]);
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  const port = await waitReady(daemon);

  const ready = await get(port, '/readyz');
  t.same(JSON.parse(ready.body), {
    status: 'ready',
    checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: 'open', storage: 'writable' },
  });
  t.equal(ready.headers.get('cache-control'), 'no-store');
  t.same(JSON.parse((await get(port, '/livez')).body), { status: 'live' });
  t.equal((await get(port, '/mcp')).status, 404, '/mcp is not served on the health listener');
  t.equal((await get(port, '/mcp', 'POST')).status, 404);
  t.equal((await get(port, '/api/admin/session')).status, 404);
  t.equal((await get(port, '/readyz', 'POST')).status, 405);

  const began = Date.now();
  daemon.child.kill('SIGTERM');
  const { code } = await daemon.exited;
  t.equal(code, 0, 'a clean exit');
  t.ok(Date.now() - began < 8_000, 'within the shutdown deadline');
  const events = daemon.lines().map((l) => l.event);
  t.ok(events.indexOf('service.ready') < events.indexOf('service.signal'));
  const exits = daemon.lines().filter((l) => l.event === 'actor.exit');
  t.same(
    exits.map((l) => [l.actor, l.reason, l.nextDelayMs]),
    [
      ['sync-scheduler', 'shutdown', null],
      ['outbox', 'shutdown', null],
      ['spam', 'shutdown', null],
      ['mail-rules', 'shutdown', null],
      ['answering', 'shutdown', null],
      ['embedding', 'shutdown', null],
      ['derivation', 'shutdown', null],
      ['contacts', 'shutdown', null],
      ['replay-guard', 'shutdown', null],
      ['store-maintenance', 'shutdown', null],
    ],
    'every child stopped, in reverse order',
  );
  t.equal(events.at(-1), 'service.stopped');
});

t.test('a second signal exits at once, without waiting for the drain', async (t) => {
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') } });
  const daemon = spawnDaemon([config], { script: 'test/fixtures/daemon/slow-stop-daemon.ts', env: { SLOW_STOP_MS: '6000' } });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  const port = await waitReady(daemon);
  daemon.child.kill('SIGTERM');
  await until(() => daemon.lines().some((l) => l.event === 'service.stopping'), 5_000, 'stop to begin');
  t.equal((await get(port, '/readyz').catch(() => ({ status: 0 }))).status === 200, false, 'not ready once stopping');
  const began = Date.now();
  daemon.child.kill('SIGTERM');
  const { code } = await daemon.exited;
  t.equal(code, 130);
  t.ok(Date.now() - began < 3_000, 'did not wait for the 6 s stop');
  t.ok(daemon.lines().some((l) => l.event === 'service.exit-now'));
});

t.test('a slow child is drained within the deadline on SIGTERM', async (t) => {
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') } });
  const daemon = spawnDaemon([config], { script: 'test/fixtures/daemon/slow-stop-daemon.ts', env: { SLOW_STOP_MS: '1500' } });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  await waitReady(daemon);
  const began = Date.now();
  daemon.child.kill('SIGINT');
  t.equal((await daemon.exited).code, 0);
  const took = Date.now() - began;
  t.ok(took >= 1_400 && took < 8_000, `waited for the child to finish stopping (${took} ms)`);
  const exits = daemon.lines().filter((l) => l.event === 'actor.exit');
  t.same(
    exits.map((l) => l.actor),
    ['slow-stopper', 'sync-scheduler', 'outbox', 'spam', 'mail-rules', 'answering', 'embedding', 'derivation', 'contacts', 'replay-guard', 'store-maintenance'],
    'reverse start order',
  );
  t.same(
    exits.map((l) => l.reason),
    exits.map(() => 'shutdown'),
    'every child stopped by the shutdown, none crashed',
  );
});

t.test('a refused configuration exits 78 naming the setting; nothing starts', async (t) => {
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Prot: 8081 }, Storage: { Database: join(dir, 'm.db') } });
  const daemon = spawnDaemon(['--config', config]);
  const { code } = await daemon.exited;
  t.equal(code, 78);
  t.match(daemon.stderr(), /HealthEndpoints:Prot/);
  t.notOk(daemon.lines().some((l) => l.event === 'service.ready'));
});

t.test('a second mailcairnd on the same database refuses to start with a clear message', async (t) => {
  const dir = tempDir(t);
  const database = join(dir, 'data', 'mailcairn.db');
  const first = spawnDaemon(['--config', writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: database } })]);
  t.teardown(() => void first.child.kill('SIGKILL'));
  const a = await waitReady(first);
  const otherDir = tempDir(t);
  const second = spawnDaemon(['--config', writeConfig(otherDir, { HealthEndpoints: { Port: 0 }, Storage: { Database: database } })]);
  const { code } = await second.exited;
  t.equal(code, 1);
  t.match(second.stderr(), /E_STORE_LOCKED/);
  t.match(second.stderr(), /another mailcairnd holds/);
  t.equal((await get(a, '/readyz')).status, 200, 'the first keeps serving');
  first.child.kill('SIGTERM');
  t.equal((await first.exited).code, 0);
});
