/**
 * How a thread is started on a module of ours. Built code (`.js`) is loaded
 * directly. Sources (`.ts`, development and tests under tsx) need the tsx
 * loader registered inside the new thread before the entry is imported:
 * Node 20 does not apply an inherited `--import tsx` to a worker's entry, so
 * a two-line bootstrap registers it first.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { applyV8Settings } from './v8-settings.ts';

function isSource(entry: URL): boolean {
  return entry.pathname.endsWith('.ts');
}

function tsxApi(): string {
  return import.meta.resolve('tsx/esm/api');
}

export function startWorker(entry: URL, options: WorkerOptions): Worker {
  applyV8Settings();
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
