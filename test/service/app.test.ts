/** The service in-process: readiness follows the database and the supervision tree. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runCheckConfig } from '../../service/check-config.ts';
import { startService } from '../../service/app.ts';
import { profile } from '../config/fixtures.ts';
import { createCa, issue } from '../harness/test-ca.ts';
import { captureLog, until } from '../helpers/log-capture.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';

t.test('a child given up turns /readyz to 503 while /livez stays 200', async (t) => {
  const dir = tempDir(t);
  const { log, events } = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') } }),
    env: {},
    log,
    extraChildren: [
      {
        id: 'doomed',
        entry: new URL('../fixtures/actors/misbehaving.ts', import.meta.url),
        restart: 'permanent',
        config: { failInit: true },
        backoff: { baseMs: 10, maxMs: 50 },
        intensity: { maxRestarts: 2, windowMs: 60_000 },
      },
    ],
  });
  t.teardown(() => service.stop());
  const port = service.health!.port;
  await until(() => events('actor.give-up', 'doomed').length === 1, 15_000, 'give-up');
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
  t.equal(ready.status, 503);
  t.same(await ready.json(), {
    status: 'not-ready',
    checks: { database: 'migrated', supervisor: 'degraded', givenUpActors: 1, listeners: 'open', storage: 'writable' },
  });
  t.equal((await fetch(`http://127.0.0.1:${port}/livez`)).status, 200);
  t.notMatch(JSON.stringify(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()), /doomed/, 'names no actor');
});

t.test('a port held by another process fails startup naming the section, and releases the database', async (t) => {
  const dir = tempDir(t);
  const { createServer } = await import('node:net');
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;
  const file = writeConfig(dir, { HealthEndpoints: { Port: port }, Storage: { Database: join(dir, 'm.db') } });
  const { log } = captureLog();
  await t.rejects(startService({ configFile: file, env: {}, log }), {
    code: 'E_CONFIG_INVALID',
    message: /HealthEndpoints: 127\.0\.0\.1:\d+ is already in use/,
  });
  const again = await startService({ configFile: writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') } }), env: {}, log });
  t.ok(again.health, 'the lock was released: a second start on the same database works');
  await again.stop();
});

t.test('a TLS profile whose certificate has expired is refused before the database is opened, as check-config refuses it', async (t) => {
  const dir = tempDir(t);
  const ca = createCa(dir, 'app-ca');
  const expired = issue(ca, { name: 'health', dns: ['health.example.org'], eku: ['serverAuth'], validFromDays: -30, validToDays: -2 });
  const { log } = captureLog();
  const file = writeConfig(dir, {
    HealthEndpoints: {
      Port: 0,
      Transport: 'HttpsOnly',
      Https: {
        Endpoints: [
          {
            ...profile('health', 'health.example.org', 0),
            ServerCertificate: {
              CertificateChain: { Name: 'health-chain', SecretReference: `file:${expired.certPath}` },
              PrivateKey: { Name: 'health-key', SecretReference: `file:${expired.keyPath}` },
            },
          },
        ],
      },
    },
    Storage: { Database: join(dir, 'm.db') },
  });
  const line =
    /^HealthEndpoints:Https:Endpoints:0:ServerCertificate:CertificateChain: the leaf certificate is not valid now: it expired on \d{4}-\d{2}-\d{2} \(rule: the certificate is valid now\)$/;
  await t.rejects(startService({ configFile: file, env: {}, log }), { code: 'E_CONFIG_INVALID', message: line });
  t.notOk(existsSync(join(dir, 'm.db')), 'no database file was created');
  const out: string[] = [];
  t.equal(runCheckConfig({ file, env: {}, out: (l) => out.push(l) }), 78);
  t.ok(
    out.some((l) => line.test(l.slice(2))),
    out.join('\n'),
  );
});
