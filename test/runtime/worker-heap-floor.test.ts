/**
 * The old-generation floor every worker of ours starts with
 * (runtime/v8-settings.ts `WORKER_OLD_SPACE_FLOOR_MIB`). Without it V8 sets
 * a thread's first limit from what its start-up kept, and the accounts
 * thread of a first mirror ran about 25 major collections in half the runs
 * where it now runs one (docs/performance.md, "The old-generation floor").
 * Here: a thread that keeps what a thread keeps from its start, then passes
 * 20 MiB of large short-lived strings, runs no major collection. Without the
 * floor (`applyV8Settings` taken out of `startWorker`) it runs one, and this fails.
 */
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import t from 'tap';
import { startWorker } from '../../runtime/worker-entry.ts';

const entry = new URL('../fixtures/threads/heap-floor-worker.ts', import.meta.url);
type Answer = { major: number; mib: number };

async function answer(worker: Worker): Promise<Answer> {
  const [message] = (await once(worker, 'message')) as [Answer];
  await worker.terminate();
  return message;
}

t.test('a worker started by startWorker runs no major collection below the floor', async (t) => {
  const { major, mib } = await answer(startWorker(entry, {}));
  t.equal(mib, 20, 'the thread passed its 20 MiB');
  t.equal(major, 0, 'no major collection');
});
