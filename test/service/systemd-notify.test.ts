/**
 * Readiness as systemd's `Type=notify` hears it (packaging/mailcairn.service):
 * the real mailcairnd, started with $NOTIFY_SOCKET naming a unix datagram
 * socket that stands in for the service manager's (test/harness/notify-socket.ts),
 * and the real `systemd-notify` sending. READY=1 arrives once, when /readyz
 * already answers 200 and every listener accepts connections; STOPPING=1
 * arrives once on SIGTERM, and the stop still ends with exit 0.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { serviceManagerNotifier } from '../../service/systemd-notify.ts';
import { startNotifySocket } from '../harness/notify-socket.ts';
import { compiledDaemon, spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';
import { captureLog, until } from '../helpers/log-capture.ts';
import { reservePort } from '../helpers/ports.ts';

t.setTimeout(180_000);

/** The status of one GET on a fresh connection, or the error code when nothing answered. */
function status(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    req.end();
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

t.test('mailcairnd under Type=notify: READY=1 once /readyz answers 200, STOPPING=1 on SIGTERM', async (t) => {
  const dir = tempDir(t);
  const notify = await startNotifySocket(dir);
  t.teardown(() => notify.close());
  const ports = { health: await reservePort(), mcp: await reservePort(), admin: await reservePort() };
  const key = (name: string): string => {
    writeFileSync(join(dir, name), `mc_${randomUUID().replaceAll('-', '')}`, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: ports.health },
    Storage: { Database: join(dir, 'data', 'mailcairn.db') },
    McpEndpoint: {
      Enabled: true,
      Port: ports.mcp,
      Authentication: [{ ApiKey: { Name: 'agent', SecretReference: key('agent.key'), Lifetime: 'NoLimit' } }],
    },
    AdminEndpoint: {
      Enabled: true,
      Port: ports.admin,
      Authentication: [{ ApiKey: { Name: 'operator', SecretReference: key('operator.key'), Lifetime: 'NoLimit' } }],
    },
    Logging: { Format: 'Json' },
  });

  // What a service manager would see at the moment READY=1 lands: probed from the message's own callback.
  const atReady: Promise<{ readyz: number | string; mcp: boolean; admin: boolean }> = new Promise((resolve) =>
    notify.onMessage((m) => {
      if (m.text !== 'READY=1') return;
      void Promise.all([status(ports.health, '/readyz'), accepts(ports.mcp), accepts(ports.admin)]).then(([readyz, mcp, admin]) =>
        resolve({ readyz, mcp, admin }),
      );
    }),
  );

  const daemon = spawnDaemon(['--config', config], { compiled: await compiledDaemon(), env: { NOTIFY_SOCKET: notify.path } });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  await notify.next('READY=1', 60_000);
  t.same(await atReady, { readyz: 200, mcp: true, admin: true }, 'when READY=1 arrives, /readyz answers 200 and every listener accepts');

  daemon.child.kill('SIGTERM');
  await notify.next('STOPPING=1', 20_000);
  const exit = await daemon.exited;
  t.same(exit, { code: 0, signal: null }, 'the stop is the graceful one');
  // systemd-notify waits for its barrier; the states themselves, in order, once each.
  const states = notify.messages().map((m) => m.text);
  t.same(
    states.filter((s) => s !== 'BARRIER=1'),
    ['READY=1', 'STOPPING=1'],
    'READY=1 once, then STOPPING=1 once',
  );
  t.ok(
    notify.messages().some((m) => m.text === 'BARRIER=1' && m.fds === 1),
    'the sender is the real systemd-notify (it waits on a barrier)',
  );
  t.same(
    daemon.lines().filter((l) => l.event === 'systemd.notify-failed'),
    [],
    'no failure to notify',
  );
});

t.test('READY=1 waits for readiness to turn true', async (t) => {
  const dir = tempDir(t);
  const notify = await startNotifySocket(dir);
  t.teardown(() => notify.close());
  const capture = captureLog();
  const notifier = serviceManagerNotifier({ env: { ...process.env, NOTIFY_SOCKET: notify.path }, log: capture.log });
  let ready = false;
  let asked = 0;
  notifier.readyWhen(() => {
    asked += 1;
    return ready;
  });
  await until(() => asked >= 3, 5_000, 'readiness asked again');
  t.same(notify.messages(), [], 'nothing sent while not ready');
  ready = true;
  await notify.next('READY=1', 10_000);
  notifier.readyWhen(() => true);
  notifier.stopping();
  notifier.stopping();
  await notify.next('STOPPING=1', 10_000);
  await until(() => notify.messages().filter((m) => m.text === 'BARRIER=1').length === 2, 10_000, 'both barriers');
  t.same(
    notify
      .messages()
      .map((m) => m.text)
      .filter((s) => s !== 'BARRIER=1'),
    ['READY=1', 'STOPPING=1'],
    'each state sent once',
  );
});

t.test('a stop before readiness sends STOPPING=1 and never READY=1', async (t) => {
  const dir = tempDir(t);
  const notify = await startNotifySocket(dir);
  t.teardown(() => notify.close());
  const notifier = serviceManagerNotifier({ env: { ...process.env, NOTIFY_SOCKET: notify.path }, log: captureLog().log });
  let ready = false;
  notifier.readyWhen(() => ready);
  notifier.stopping();
  ready = true;
  await notify.next('STOPPING=1', 10_000);
  // Longer than the readiness poll: a READY=1 would have been sent by now.
  await new Promise((r) => setTimeout(r, 1_000));
  t.same(
    notify.messages().map((m) => m.text),
    ['STOPPING=1', 'BARRIER=1'],
  );
});

t.test('without NOTIFY_SOCKET nothing is sent; without systemd-notify, one warning naming the state', async (t) => {
  const capture = captureLog();
  const off = serviceManagerNotifier({ env: {}, log: capture.log });
  t.equal(off.enabled, false, 'not started by a service manager: off');
  off.readyWhen(() => true);
  off.stopping();

  const dir = tempDir(t);
  const emptyPath = join(dir, 'bin');
  mkdirSync(emptyPath);
  const missing = serviceManagerNotifier({ env: { NOTIFY_SOCKET: join(dir, 'notify.sock'), PATH: emptyPath }, log: capture.log });
  missing.readyWhen(() => true);
  await until(() => capture.events('systemd.notify-failed').length === 1, 10_000, 'the warning');
  const [line] = capture.events('systemd.notify-failed');
  t.match(line, { level: 40, state: 'READY=1', code: 'ENOENT' });
  t.equal(capture.lines.length, 1, 'the notifier that was off logged nothing');
});
