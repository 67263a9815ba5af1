/**
 * Start-up as a load balancer and a service manager meet it (issue 26): the
 * real `mailcairnd`, polled and signalled from outside while it starts.
 * - Readiness answers 2xx only once the MCP and admin listeners accept
 *   connections; before that, 503 in the not-ready shape.
 * - A SIGTERM at any point of start-up ends with the graceful sequence and
 *   exit 0; one that arrives before Node has run mailcairnd's first line ends
 *   the process by the default action having opened nothing.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { compiledDaemon, spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';
import { reservePort } from '../helpers/ports.ts';

// A dozen or more starts of a real process: more than tap's default per-file allowance on a loaded machine.
t.setTimeout(300_000);

type Answer = { status: number; body: string };

/** One GET on a fresh connection; null when nothing accepts on the port yet. */
function get(port: number, path: string): Promise<Answer | null> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve(null) : reject(err)));
    req.end();
  });
}

function serviceConfig(dir: string, ports: { health: number; mcp: number; admin: number }): string {
  const key = (name: string): string => {
    writeFileSync(join(dir, name), `mc_${randomUUID().replaceAll('-', '')}`, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  return writeConfig(dir, {
    HealthEndpoints: { Port: ports.health },
    Storage: { Database: join(dir, 'mailcairn.db') },
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
  });
}

t.test('readiness answers 2xx only once the MCP and admin listeners accept connections', async (t) => {
  const compiled = await compiledDaemon();
  const ports = { health: await reservePort(), mcp: await reservePort(), admin: await reservePort() };
  for (let start = 1; start <= 3; start++) {
    const dir = tempDir(t);
    const daemon = spawnDaemon(['--config', serviceConfig(dir, ports)], { compiled });
    t.teardown(() => void daemon.child.kill('SIGKILL'));
    let gone = false;
    void daemon.exited.then(() => (gone = true));

    const notReady: Answer[] = [];
    let ready: { health: Answer; mcp: Answer | null; mcpReadiness: Answer | null; admin: Answer | null } | null = null;
    for (const end = Date.now() + 60_000; ready === null && !gone && Date.now() < end; ) {
      // As tight as the loop can go: a fresh connection per probe, no pause between them.
      const health = await get(ports.health, '/readyz');
      if (health === null) continue;
      if (health.status !== 200) {
        notReady.push(health);
        continue;
      }
      // The first 2xx: the other listeners must accept connections already.
      const [mcp, mcpReadiness, admin] = await Promise.all([get(ports.mcp, '/mcp'), get(ports.mcp, '/readyz'), get(ports.admin, '/api/admin/session')]);
      ready = { health, mcp, mcpReadiness, admin };
    }
    if (ready === null) throw new Error(`start ${start}: never ready (${daemon.stderr().slice(-400)})`);
    t.not(ready.mcp, null, `start ${start}: the MCP listener accepts connections at the first ready answer`);
    t.equal(ready.mcp?.status, 401, `start ${start}: and answers /mcp (no credential: 401)`);
    t.equal(ready.mcpReadiness?.status, 200, `start ${start}: the MCP listener's own /readyz answers ready`);
    t.not(ready.admin, null, `start ${start}: the admin listener accepts connections at the first ready answer`);
    t.equal(ready.admin?.status, 401, `start ${start}: and answers its routes (no credential: 401)`);
    t.same(JSON.parse(ready.health.body).checks.listeners, 'open');
    t.ok(notReady.length > 0, `start ${start}: the health listener answered while the others were opening (${notReady.length} not-ready answers)`);
    const shape = (a: Answer): string => {
      const body = JSON.parse(a.body) as { status: string; checks: { database: string; listeners: string } };
      return `${a.status} ${body.status} database:${body.checks.database} listeners:${body.checks.listeners}`;
    };
    t.same([...new Set(notReady.map(shape))], ['503 not-ready database:migrated listeners:opening'], `start ${start}: every earlier answer was 503 not-ready`);
    daemon.child.kill('SIGTERM');
    t.equal((await daemon.exited).code, 0, `start ${start}: stopped cleanly`);
  }
});

type Outcome = { code: number | null; signal: NodeJS.Signals | null; before: string; events: string[]; stderr: string; files: string[] };

/** Spawn, send SIGTERM when `when` says so (given the stdout so far), and report how the process ended. */
async function signalDuringStart(t: Test, compiled: string, when: { afterMs: number } | { afterEvent: string }): Promise<Outcome> {
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Port: 0 }, McpEndpoint: { Enabled: false }, Storage: { Database: join(dir, 'data', 'mailcairn.db') } });
  const daemon = spawnDaemon(['--config', config], { compiled });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  let before = '';
  const send = (): void => {
    if (before !== '' || daemon.child.exitCode !== null) return;
    before = `${daemon.stdout()}.`; // the stdout seen when the signal went (never empty once sent)
    daemon.child.kill('SIGTERM');
  };
  if ('afterMs' in when) {
    await new Promise((resolve) => daemon.child.once('spawn', resolve));
    if (when.afterMs === 0) send();
    else setTimeout(send, when.afterMs);
  } else {
    daemon.child.stdout!.on('data', () => {
      if (daemon.lines().some((l) => l.event === when.afterEvent)) send();
    });
  }
  const { code, signal } = await daemon.exited;
  return {
    code,
    signal,
    before: before.slice(0, -1),
    events: daemon.lines().map((l) => String(l.event)),
    stderr: daemon.stderr(),
    files: existsSync(join(dir, 'data')) ? readdirSync(join(dir, 'data')) : [],
  };
}

function assertGraceful(t: Test, outcome: Outcome, what: string): void {
  t.same([outcome.code, outcome.signal], [0, null], `${what}: exit 0, not ended by the signal (${outcome.stderr.slice(-300)})`);
  const { events } = outcome;
  t.ok(events.includes('service.signal'), `${what}: service.signal`);
  t.ok(events.indexOf('service.stopping') > events.indexOf('service.signal'), `${what}: then service.stopping`);
  t.equal(events.at(-1), 'service.stopped', `${what}: service.stopped last`);
  t.notOk(events.includes('service.fatal') || events.includes('service.stop-overran'), `${what}: no fatal, no overrun`);
}

t.test('a SIGTERM at any point of start-up stops gracefully', async (t) => {
  const compiled = await compiledDaemon();
  for (const event of ['service.starting', 'store.migrated', 'listener.open']) {
    const outcome = await signalDuringStart(t, compiled, { afterEvent: event });
    t.ok(outcome.before.includes(`"event":"${event}"`), `after ${event}: the signal went once the line was out`);
    assertGraceful(t, outcome, `after ${event}`);
  }

  // From the spawn on, in steps of 100 ms until the signal goes after the first log line. Before Node
  // has run mailcairnd's first line no JavaScript can catch it: the process ends by the default
  // action, and then must have opened nothing. From that line on the signal is held until the
  // service can stop. If no step fell between the two, halve the gap between the last step before
  // the first line and the first after the log line until one does (a few more starts at most).
  let held = 0;
  let before = 0; // the latest delay known to land before the first log line
  let after = Number.POSITIVE_INFINITY; // the earliest delay known to land after it
  for (let afterMs = 0, starts = 0; held === 0 && starts < 40; starts++) {
    const outcome = await signalDuringStart(t, compiled, { afterMs });
    const what = `${afterMs} ms after spawn`;
    if (outcome.signal === 'SIGTERM') {
      t.same([outcome.before, outcome.events, outcome.files, outcome.stderr], ['', [], [], ''], `${what}: ended before its first line, having opened nothing`);
    } else {
      assertGraceful(t, outcome, what);
      if (outcome.before === '') held++;
    }
    if (outcome.before === '') before = afterMs;
    else after = Math.min(after, afterMs);
    afterMs = after === Number.POSITIVE_INFINITY ? afterMs + 100 : Math.round((before + after) / 2);
    if (after - before < 2) break;
  }
  t.ok(held > 0, 'a signal that came before the first log line was held and stopped the service gracefully');
});

t.test('a second signal during start-up exits at once', async (t) => {
  const compiled = await compiledDaemon();
  const dir = tempDir(t);
  const config = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'mailcairn.db') } });
  const daemon = spawnDaemon(['--config', config], { compiled });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  await new Promise<void>((resolve) =>
    daemon.child.stdout!.on('data', () => {
      if (daemon.lines().some((l) => l.event === 'service.starting')) resolve();
    }),
  );
  daemon.child.kill('SIGTERM');
  daemon.child.kill('SIGINT');
  t.same(await daemon.exited, { code: 130, signal: null });
});
