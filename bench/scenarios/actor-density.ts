/**
 * actor-density: what hosting many actors costs. The same number of actors
 * started on shared threads (`actorsPerThread`) and on a thread each, with
 * the process's resident memory and the start time for each layout, and the
 * ask throughput across all of them. This is the evidence for the default
 * placement of account actors (docs/actors.md).
 */
import { performance } from 'node:perf_hooks';
import { createLogger } from '../../runtime/log.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import { Supervisor } from '../../runtime/supervisor/supervisor.ts';
import type { Placement } from '../../runtime/supervisor/child-spec.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';

const layouts: Array<{ actors: number; label: string; placement: Placement }> = [
  { actors: 1, label: 'dedicated', placement: { kind: 'dedicated' } },
  { actors: 100, label: 'dedicated', placement: { kind: 'dedicated' } },
  { actors: 100, label: 'shared 25/thread', placement: { kind: 'shared', group: 'accounts', actorsPerThread: 25 } },
  { actors: 500, label: 'shared 25/thread', placement: { kind: 'shared', group: 'accounts', actorsPerThread: 25 } },
  { actors: 500, label: 'shared 100/thread', placement: { kind: 'shared', group: 'accounts', actorsPerThread: 100 } },
];

function rssMiB(): number {
  return process.memoryUsage().rss / 1024 / 1024;
}

async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 500));
  (globalThis as { gc?: () => void }).gc?.();
}

export const actorDensity: Scenario = {
  name: 'actor-density',
  description: 'memory and start time of N actors, shared threads vs a thread each',
  async run() {
    const rows: Row[] = [];
    const entry = moduleUrl('../fixtures/echo-actor.ts', import.meta.url);
    for (const layout of layouts) {
      await settle();
      const before = rssMiB();
      const supervisor = new Supervisor({ log: createLogger({ level: 'warn', format: 'Json' }), hostLogLevel: 'warn' });
      const started = performance.now();
      const ids = Array.from({ length: layout.actors }, (_, i) => `a${i}`);
      await Promise.all(ids.map((id) => supervisor.startChild({ id, entry, restart: 'permanent', placement: layout.placement })));
      const startMs = performance.now() - started;
      await settle();
      const grown = rssMiB() - before;
      const askStart = performance.now();
      const rounds = 20;
      for (let r = 0; r < rounds; r++) {
        await Promise.all(ids.map((id) => supervisor.ref(id).ask({ type: 'echo', bytes: new Uint8Array(100) })));
      }
      const askMs = performance.now() - askStart;
      const threads = layout.placement.kind === 'dedicated' ? layout.actors : Math.ceil(layout.actors / layout.placement.actorsPerThread);
      rows.push({
        layout: layout.label,
        actors: layout.actors,
        threads,
        'start ms': Math.round(startMs),
        'RSS growth MiB': Math.round(grown),
        'MiB per actor': round(grown / layout.actors, 2),
        'asks/s (all actors)': Math.round((layout.actors * rounds) / (askMs / 1_000)),
      });
      await supervisor.stop(30_000);
    }
    return rows;
  },
};
