// A preload (`node --require bench/heap-trace.cjs`) for profile-ingest.ts's
// PROFILE_HEAP_DIR: Node runs it in the main thread and in every worker
// thread, so each isolate appends its V8 heap figures every 250 ms to a file
// of its own, named by thread id, with what the thread is (host, pool task).
// A bench diagnostic: the daemon's code does not know it.
const { appendFileSync } = require('node:fs');
const { join } = require('node:path');
const v8 = require('node:v8');
const { threadId, workerData } = require('node:worker_threads');

const dir = process.env.PROFILE_HEAP_DIR;
if (dir) {
  const label = describe(workerData);
  const file = join(dir, `${process.pid}-${threadId}.jsonl`);
  const sample = () => {
    const h = v8.getHeapStatistics();
    const m = process.memoryUsage();
    const row = {
      t: Date.now(),
      thread: threadId,
      label,
      total: h.total_heap_size,
      physical: h.total_physical_size,
      young: v8
        .getHeapSpaceStatistics()
        .filter((space) => space.space_name.startsWith('new'))
        .reduce((n, space) => n + space.physical_space_size, 0),
      used: h.used_heap_size,
      external: h.external_memory,
      malloced: h.malloced_memory,
      arrayBuffers: m.arrayBuffers,
    };
    appendFileSync(file, `${JSON.stringify(row)}\n`);
  };
  sample();
  setInterval(sample, 250).unref();
}

function describe(data) {
  if (data === undefined || data === null) return threadId === 0 ? 'main' : 'worker';
  if (typeof data.hostId === 'string') return `host ${data.hostId}`;
  // piscina passes its own workerData; the pool's is inside it.
  const text = JSON.stringify(data);
  const entry = /"entry":"([^"]+)"/.exec(text);
  if (entry) return `pool ${entry[1].split('/').slice(-2).join('/')}`;
  return `worker ${text.slice(0, 60)}`;
}
