/**
 * The JavaScript heap of another Node process, read through its inspector:
 * the daemon has no route that reports `process.memoryUsage()`, and /proc
 * only knows resident pages. The process is started with
 * `--inspect=127.0.0.1:<port>` (`inspectorArgs`); `attachHeapReader` opens
 * one DevTools session on it and, through the NodeWorker domain, one on each
 * of its worker threads (the actor hosts are isolates of their own). A read
 * asks every isolate for a full collection (`HeapProfiler.collectGarbage`)
 * and then its used and total heap (`Runtime.getHeapUsage`): the live set,
 * which a leak grows and the collector's sawtooth does not. One forced
 * collection per read, once a minute, beside the many V8 runs by itself.
 */
import { WebSocket } from 'undici';

/** Node flags that open the inspector on a loopback port and nowhere else. */
export function inspectorArgs(port: number): string[] {
  return [`--inspect=127.0.0.1:${port}`];
}

export type HeapUsage = {
  /** Used heap summed over every isolate answering, MiB. */
  usedMiB: number;
  /** Heap reserved by V8 (used + free within its pages), MiB. */
  totalMiB: number;
  /** Isolates that answered: the main thread and each worker thread. */
  isolates: number;
};

export type HeapReader = { read(): Promise<HeapUsage>; close(): void };

type Pending = { resolve(v: Record<string, unknown>): void; reject(e: Error): void };
type Message = { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { message: string } };

const MiB = 1024 * 1024;
const CALL_LIMIT_MS = 30_000;

/** Connects to the inspector on `port` (retrying while the process starts); the reader then serves every read. */
export async function attachHeapReader(port: number, limitMs = 30_000): Promise<HeapReader> {
  const started = Date.now();
  let url: string | null = null;
  while (url === null) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl?: string }>;
      url = targets[0]?.webSocketDebuggerUrl ?? null;
    } catch {
      // not listening yet
    }
    if (url === null) {
      if (Date.now() - started > limitMs) throw new Error(`no inspector on port ${port} within ${limitMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new Error('the inspector refused the session')), { once: true });
  });

  let nextId = 1;
  const pending = new Map<number, Pending>();
  /** Worker sessions by id, each with its own pending calls. */
  const workers = new Map<string, Map<number, Pending>>();

  const settle = (table: Map<number, Pending>, m: Message): void => {
    if (m.id === undefined) return;
    const p = table.get(m.id);
    if (!p) return;
    table.delete(m.id);
    if (m.error) p.reject(new Error(m.error.message));
    else p.resolve(m.result ?? {});
  };
  socket.addEventListener('message', (event) => {
    const m = JSON.parse(String(event.data)) as Message;
    if (m.method === 'NodeWorker.attachedToWorker') workers.set(String(m.params!.sessionId), new Map());
    else if (m.method === 'NodeWorker.detachedFromWorker') {
      const table = workers.get(String(m.params!.sessionId));
      workers.delete(String(m.params!.sessionId));
      for (const p of table?.values() ?? []) p.reject(new Error('the worker ended'));
    } else if (m.method === 'NodeWorker.receivedMessageFromWorker') {
      const table = workers.get(String(m.params!.sessionId));
      if (table) settle(table, JSON.parse(String(m.params!.message)) as Message);
    } else settle(pending, m);
  });

  const bounded = <T>(p: Promise<T>, what: string): Promise<T> =>
    Promise.race([
      p,
      new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${CALL_LIMIT_MS} ms`)), CALL_LIMIT_MS).unref()),
    ]);
  const call = (method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
    const id = nextId++;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => pending.set(id, { resolve, reject }));
    socket.send(JSON.stringify({ id, method, params }));
    return bounded(answer, method);
  };
  const callWorker = (sessionId: string, method: string): Promise<Record<string, unknown>> => {
    const table = workers.get(sessionId);
    if (!table) return Promise.reject(new Error('the worker ended'));
    const id = nextId++;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => table.set(id, { resolve, reject }));
    void call('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) }).catch(() => undefined);
    return bounded(answer, `worker ${method}`);
  };

  await call('NodeWorker.enable', { waitForDebuggerOnStart: false });

  const usageOf = async (ask: (method: string) => Promise<Record<string, unknown>>): Promise<{ used: number; total: number } | null> => {
    try {
      await ask('HeapProfiler.collectGarbage');
      const u = await ask('Runtime.getHeapUsage');
      return { used: Number(u.usedSize), total: Number(u.totalSize) };
    } catch {
      return null; // a worker that ended between the list and the call
    }
  };

  return {
    async read() {
      const all = await Promise.all([usageOf((m) => call(m)), ...[...workers.keys()].map((s) => usageOf((m) => callWorker(s, m)))]);
      const answered = all.filter((u): u is { used: number; total: number } => u !== null);
      return {
        usedMiB: answered.reduce((s, u) => s + u.used, 0) / MiB,
        totalMiB: answered.reduce((s, u) => s + u.total, 0) / MiB,
        isolates: answered.length,
      };
    },
    close() {
      socket.close();
    },
  };
}
