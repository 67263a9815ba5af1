/**
 * Ports in tests: a reserved port is never handed out twice, not within a
 * process and not across the processes of a run, and lies outside the
 * kernel's ephemeral range; many services and peers started at once, in
 * parallel processes as tap runs test files, never clash on a port.
 * (Issue 17: close-then-reuse handed one port to two listeners.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { claimPort, PORT_CLAIMS, reservableRange, reservePort } from '../helpers/ports.ts';

const fixture = fileURLToPath(new URL('../fixtures/ports/start-many.ts', import.meta.url));

type Outcome = { ports?: number[]; error?: string };

/** Start the fixture and wait for its answer; it keeps what it holds until `release()`. */
function runFixture(args: string[]): Promise<Outcome & { release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const release = async (): Promise<void> => {
      child.stdin.end();
      await exited;
      clearTimeout(timer);
    };
    let out = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve({ ...(JSON.parse(out.split('\n')[0]!) as Outcome), release });
    });
    void exited.then(() => resolve({ error: `exited without an answer: ${out}`, release }));
  });
}

/** Run `count` fixtures at once; every answer is read while all of them still hold their ports. */
async function together(count: number, args: string[]): Promise<Outcome[]> {
  const outcomes = await Promise.all(Array.from({ length: count }, () => runFixture(args)));
  await Promise.all(outcomes.map((o) => o.release()));
  return outcomes;
}

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

t.test('reservations are unique across parallel processes and never ephemeral', async (t) => {
  const outcomes = await together(6, ['reserve', '40']);
  t.same(
    outcomes.map((o) => o.error),
    outcomes.map(() => undefined),
    'every process reserved and bound its ports',
  );
  const all = outcomes.flatMap((o) => o.ports ?? []);
  t.equal(all.length, 240);
  t.equal(new Set(all).size, all.length, 'no port handed out twice among processes running together');
  t.ok(
    all.every((p) => p >= reservableRange().low && p < ephemeralLow),
    'every port lies below the ephemeral range, where no bind to port 0 lands',
  );
});

t.test('dozens of listeners started at once across processes: no clash', async (t) => {
  // 4 processes × (1 Dovecot + 3 services × 3 listeners) = 40 listeners, all started together.
  const outcomes = await together(4, ['services', '3']);
  t.same(
    outcomes.map((o) => o.error),
    outcomes.map(() => undefined),
    'every service and Dovecot started',
  );
  const all = outcomes.flatMap((o) => o.ports ?? []);
  t.equal(all.length, 40);
  t.equal(new Set(all).size, all.length, 'forty distinct ports');
});

t.test('within one process, a number is never handed out twice', async (t) => {
  const ports = await Promise.all(Array.from({ length: 50 }, () => reservePort()));
  t.equal(new Set(ports).size, 50);
});

t.test("a dead holder's claim is passed over, a live holder's is respected", async (t) => {
  mkdirSync(PORT_CLAIMS, { recursive: true });
  const { low, high } = reservableRange();
  // Find two ports nobody has claimed yet (generation 1 absent).
  const unclaimed: number[] = [];
  for (let p = high; unclaimed.length < 2 && p >= low; p--) if (!existsSync(join(PORT_CLAIMS, `${p}.1`))) unclaimed.push(p);
  const [stale, taken] = unclaimed as [number, number];

  const dead = spawn(process.execPath, ['-e', '']);
  await new Promise((r) => dead.once('exit', r));
  writeFileSync(join(PORT_CLAIMS, `${stale}.1`), String(dead.pid));
  t.ok(claimPort(stale), 'claimed over a crashed holder');
  t.equal(readFileSync(join(PORT_CLAIMS, `${stale}.2`), 'utf8'), String(process.pid), 'as the next generation; the old claim was left alone');

  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
  t.teardown(() => void live.kill('SIGKILL'));
  writeFileSync(join(PORT_CLAIMS, `${taken}.1`), String(live.pid));
  t.notOk(claimPort(taken), 'a live holder keeps its port');
});
