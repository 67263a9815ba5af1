/**
 * runtime/thread-priority.ts: a thread that lowers its priority lowers its
 * own only (the process's other threads keep theirs), and asking for a
 * higher priority than the thread has changes nothing. Linux only: elsewhere
 * threads cannot be told apart and the call answers null.
 */
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import { lowerThreadPriority, threadId } from '../../runtime/thread-priority.ts';

/** A thread's nice value as the kernel reports it (field 19 of /proc/<pid>/task/<tid>/stat). */
function niceOf(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

const MODULE = new URL('../../runtime/thread-priority.ts', import.meta.url).href;

type Answer = { tid: number | null; first: number | null; second: number | null };

/** Runs `lowerThreadPriority(nice)` then `lowerThreadPriority(then)` in a new thread, which stays alive until the test ends. */
async function inWorker(t: Test, nice: number, then: number): Promise<Answer> {
  const worker = new Worker(
    // The tsx loader registered in the new thread first, as runtime/pool/source-task.mjs does for pool threads.
    `import('tsx/esm/api')
       .then(({ register }) => register())
       .then(() => import(${JSON.stringify(MODULE)}))
       .then(({ lowerThreadPriority, threadId }) => {
         const first = lowerThreadPriority(${nice});
         const second = lowerThreadPriority(${then});
         require('node:worker_threads').parentPort.postMessage({ tid: threadId(), first, second });
         setTimeout(() => {}, 60_000);
       });`,
    { eval: true },
  );
  t.teardown(() => worker.terminate());
  return new Promise<Answer>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

t.test('a thread lowers its own priority and no other thread’s; never raises it (off Linux: nothing, answered null)', async (t) => {
  if (process.platform !== 'linux') {
    t.equal(lowerThreadPriority(), null, 'threads cannot be told apart here: nothing is changed');
    return;
  }
  const main = threadId();
  t.equal(main, process.pid, 'the main thread’s id is the process id');
  const before = niceOf(main!);
  const { tid, first, second } = await inWorker(t, 10, 5);
  t.ok(tid !== null && tid !== main, 'the worker has a thread id of its own');
  t.equal(first, 10, 'the worker now runs at nice 10');
  t.equal(niceOf(tid!), 10, 'as the kernel reports it');
  t.equal(second, 10, 'asking for 5 afterwards leaves it at 10: a thread is never raised');
  t.equal(niceOf(main!), before, 'the main thread keeps its priority');
});
