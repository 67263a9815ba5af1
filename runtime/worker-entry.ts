/**
 * How a thread is started on a module of ours. Built code (`.js`) is loaded
 * directly. Sources (`.ts`, development and tests under tsx) need the tsx
 * loader registered inside the new thread before the entry is imported:
 * Node 20 does not apply an inherited `--import tsx` to a worker's entry, so
 * a two-line bootstrap registers it first.
 */
import v8 from 'node:v8';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * The old-generation limit below which no worker isolate's major collection
 * is scheduled (V8's `--initial-old-space-size`; measured, V8 keeps it as a
 * floor after collections too). Without it V8 sets a thread's limit about
 * 8 MiB above what survived its last major collection, and counts the
 * thread's live ArrayBuffers (raw mail held between fetch and store)
 * against that margin: the accounts thread then ran a major collection for
 * every 8 MiB of mail it took in, about 25 in a 5,000-message mirror
 * instead of 1, in about half of all runs (docs/performance.md, "The
 * old-generation floor").
 */
export const WORKER_OLD_SPACE_FLOOR_MIB = 64;

let floored = false;

/**
 * Gives every worker isolate started after it the floor. V8 reads the flag
 * when it creates an isolate, so the main thread's, made before, keeps its
 * own limits; set once, before the first worker, and never changed back.
 */
export function floorWorkerOldSpace(): void {
  if (floored) return;
  floored = true;
  v8.setFlagsFromString(`--initial-old-space-size=${WORKER_OLD_SPACE_FLOOR_MIB}`);
}

function isSource(entry: URL): boolean {
  return entry.pathname.endsWith('.ts');
}

function tsxApi(): string {
  return import.meta.resolve('tsx/esm/api');
}

export function startWorker(entry: URL, options: WorkerOptions): Worker {
  floorWorkerOldSpace();
  if (!isSource(entry)) return new Worker(entry, options);
  const boot = `import(${JSON.stringify(tsxApi())}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
}

/** A module URL that piscina can load: the entry itself, or an ESM bootstrap for sources. */
export function poolModule(entry: URL): string {
  if (!isSource(entry)) return entry.href;
  const source =
    `import { register } from ${JSON.stringify(tsxApi())}; register();\n` +
    `const task = await import(${JSON.stringify(entry.href)});\nexport default task.default;\n`;
  return `data:text/javascript,${encodeURIComponent(source)}`;
}
