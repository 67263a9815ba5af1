/**
 * cli: what a command of the operator client costs from the outside (issue
 * 33, "A fast client"; docs/performance.md "Client start-up"), wall and CPU
 * per command, each way the client is offered, beside `node -e 0` (Node's
 * own start-up, the floor every way but the executable stands on) in the
 * same run.
 *
 * Setup: a test deployment in this process (test/helpers/cli-service.ts
 * `startCliService`: the service for real, its administrative listener on
 * loopback, no account, no send), a HOME of the scenario's own signed in
 * with the operator's API key, and the client five ways:
 *  - `sources`: `node --import tsx bin/mailcairn.ts` (the checkout, as the
 *    tests run it);
 *  - `dist`: `node dist/bin/mailcairn.js` (tsc's output, one file per module,
 *    dependencies from node_modules; this build compiles it);
 *  - `bundle`: `node mailcairn.cjs` (packaging/client-bundle.ts; the
 *    packaged `mailcairn` command, zod in `zod.cjs` beside it);
 *  - `asset`: the release's `mailcairn.cjs`, one file holding zod too;
 *  - `binary`: `mailcairn-linux-x64` (packaging/release.ts: the single
 *    executable, with V8's code cache of the bundle).
 * The bundle and the executable are built as test/helpers/client-build.ts builds
 * them (cached in the temporary directory by their content).
 *
 * Measured: `status`, `mailbox status` and `outbox list` (each one session
 * request and, but for status, one more), and `node -e 0`. Each round runs
 * every (way, command) once and `node -e 0` once per command, the order
 * reversed every other round (docs/benchmarks.md "Order"); one untimed
 * round first. BENCH_CLI_ROUNDS (default 10) rounds; the figures are the
 * medians over the rounds. Wall: this process's clock from spawn to exit;
 * CPU: user + system of the client process as the kernel accounted it when
 * it was reaped (bench/peers/process-stats.ts, the wait4 wrapper). The
 * deployment runs in this process, so its share of a command is in the wall
 * time, not in the CPU.
 *
 * Goal: `status` through the bundle under 100 ms wall.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtClient } from '../../test/helpers/client-build.ts';
import { startCliService } from '../../test/helpers/cli-service.ts';
import { goalRow, millis } from '../goals.ts';
import { timed } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { median, round } from '../stats.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const GOAL_MS = 100;

type Way = 'sources' | 'dist' | 'bundle' | 'asset' | 'binary';
const FLOOR = 'node -e 0';
/** One process to time: a way and a command, or the floor (`node -e 0`, whose turns share one row). */
type Side = { row: string; way: Way | typeof FLOOR; command: string; args: string[] };
type Samples = { wall: number[]; cpu: number[]; user: number[]; sys: number[] };

const COMMANDS: ReadonlyArray<readonly string[]> = [['status'], ['mailbox', 'status'], ['outbox', 'list']];

async function run(): Promise<Row[]> {
  const rounds = Number(process.env.BENCH_CLI_ROUNDS ?? '10');
  const teardowns: Array<() => unknown> = [];
  const home = mkdtempSync(join(tmpdir(), 'mailcairn-bench-cli-'));
  try {
    const client = await builtClient();
    const svc = await startCliService({ teardown: (fn) => teardowns.push(fn) });
    const config = join(home, 'config');
    mkdirSync(config, { recursive: true });
    const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: config };
    const ways: Record<Way, { command: string; args: string[] }> = {
      sources: { command: process.execPath, args: ['--import', 'tsx', join(root, 'bin/mailcairn.ts')] },
      dist: { command: process.execPath, args: [join(root, 'dist/bin/mailcairn.js')] },
      bundle: { command: process.execPath, args: [client.packaged] },
      asset: { command: process.execPath, args: [client.bundle] },
      binary: { command: client.binary, args: [] },
    };
    // Asynchronously: the deployment answers from this process's event loop.
    const login = spawn(client.binary, ['login', '--endpoint', svc.admin], { env, stdio: ['pipe', 'ignore', 'pipe'] });
    let loginErrors = '';
    login.stderr.on('data', (d: Buffer) => (loginErrors += d.toString()));
    login.stdin.end(`${svc.keys.operator}\n`);
    const [loginCode] = (await once(login, 'close')) as [number | null];
    if (loginCode !== 0) throw new Error(`mailcairn login failed: ${loginErrors}`);

    // Per command: the floor, then each way.
    const sides: Side[] = COMMANDS.flatMap((words) => [
      { row: FLOOR, way: FLOOR, command: process.execPath, args: ['-e', '0'] },
      ...(Object.keys(ways) as Way[]).map((way) => ({
        row: `${way}|${words.join(' ')}`,
        way,
        command: ways[way].command,
        args: [...ways[way].args, ...words],
      })),
    ]);
    const samples = new Map<string, Samples>(sides.map((s) => [s.row, { wall: [], cpu: [], user: [], sys: [] }]));
    for (let r = -1; r < rounds; r += 1) {
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const t = await timed(side.command, side.args, env);
        if (r < 0) continue; // the untimed round
        const s = samples.get(side.row)!;
        s.wall.push(t.wallMs);
        s.cpu.push(t.cpuMs);
        s.user.push(t.userMs);
        s.sys.push(t.sysMs);
      }
    }

    const floor = samples.get(FLOOR)!;
    const floorWall = median(floor.wall);
    const floorCpu = median(floor.cpu);
    const rows: Row[] = [...samples].map(([key, s]) => {
      const [way, command] = key === FLOOR ? ['(floor)', FLOOR] : key.split('|');
      const wall = median(s.wall);
      const cpu = median(s.cpu);
      return {
        command: command!,
        way: way!,
        runs: s.wall.length,
        'wall ms': round(wall),
        'wall min ms': round(Math.min(...s.wall)),
        'cpu ms': round(cpu),
        'user ms': round(median(s.user)),
        'sys ms': round(median(s.sys)),
        'wall ÷ node -e 0': round(wall / floorWall, 2),
        'cpu ÷ node -e 0': round(cpu / floorCpu, 2),
      };
    });
    const measured = median(samples.get('bundle|status')!.wall);
    rows.push(
      goalRow({
        goal: `status (bundle) < ${GOAL_MS} ms wall`,
        measured: millis(measured),
        peer: `node -e 0 ${millis(floorWall)}`,
        met: Number.isFinite(measured) ? measured < GOAL_MS : null,
      }),
    );
    rows.push({
      note: `load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; assets ${client.reused ? 'reused from' : 'built in'} ${client.dir}`,
    });
    return rows;
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    rmSync(home, { recursive: true, force: true });
  }
}

export const cli: Scenario = {
  name: 'cli',
  description: 'the operator client per command (status, mailbox status, outbox list): sources, dist/, bundle, executable, beside node -e 0',
  run,
};
