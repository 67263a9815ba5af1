/**
 * The main thread's OTLP requests, sent from a thread of their own.
 *
 * The main thread serves every HTTP exchange, and V8 compiles node:http's
 * own functions (the parser's callbacks, `OutgoingMessage`'s writes,
 * `IncomingMessage`, the socket's reads) for the objects it sees there. An
 * exporter's request through node:http now and then (a metric push, a batch
 * of spans) hands those functions a client request and a client response:
 * they are deoptimised and come back polymorphic, and every `/mcp` call pays
 * for it afterwards (`--trace-deopt` of the telemetry bench's daemon, and
 * docs/performance.md "Telemetry", stop 45). So the main thread's exporters
 * keep everything but the request (serialisation, the bounded queue, their
 * timeouts, the `otel.sdk.exporter.*` figures), and this thread sends it
 * with OpenTelemetry's own node:http transport (retries, compression,
 * headers and certificates from the OTLP variables, as before).
 *
 * An actor host thread's span exporter sends from that thread as before
 * (host-sdk.ts): no listener's hot path is there.
 *
 * Made by sdk.ts only when the main thread exports over OTLP; the thread
 * starts with the first request and ends at shutdown.
 */
import type { Worker } from 'node:worker_threads';
import type { ExportResponse, IExporterTransport } from '@opentelemetry/otlp-exporter-base';
import { moduleUrl } from '../module-url.ts';
import { startWorker } from '../worker-entry.ts';

/** Which signal a request carries: the OTLP options the thread reads for it (`OTEL_EXPORTER_OTLP_<SIGNAL>_*`). */
export type ExportSignal = 'METRICS' | 'TRACES';

/** One serialised export, to `url` with `contentType`. */
export type ExportRequest = { id: number; signal: ExportSignal; url: string; contentType: string; data: Uint8Array; timeoutMillis: number };

/** How it went: a failure carries the error's message and code, which only classify it (diagnostics.ts never logs the text). */
export type ExportAnswer = { id: number; ok: true } | { id: number; ok: false; message: string; code: string | undefined };

const entry = moduleUrl('./export-thread-main.ts', import.meta.url);

export class ExportThread {
  #worker: Worker | null = null;
  #next = 1;
  readonly #waiting = new Map<number, (response: ExportResponse) => void>();

  /** The transport an exporter of `signal` to `url` is built with (otlp-exporters.ts). */
  transport(signal: ExportSignal, url: string, contentType: string): IExporterTransport {
    return {
      send: (data, timeoutMillis) => this.#send({ signal, url, contentType, data, timeoutMillis }),
      // The thread is the service's, not one exporter's: `close` ends it.
      shutdown: () => {},
    };
  }

  /** Ends the thread; a request still under way is answered as failed. Called after the exporters' last export. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    if (worker !== null) await worker.terminate();
    this.#failAll('the export thread ended');
  }

  #send(request: Omit<ExportRequest, 'id'>): Promise<ExportResponse> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      const worker = this.#thread();
      // While an answer is awaited the thread keeps the process running (the last export at shutdown), and only then.
      worker.ref();
      worker.postMessage({ id, ...request } satisfies ExportRequest);
    });
  }

  #thread(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = startWorker(entry, { stdout: false, stderr: false });
    worker.on('message', (answer: ExportAnswer) => {
      const resolve = this.#waiting.get(answer.id);
      if (resolve === undefined) return;
      this.#waiting.delete(answer.id);
      if (this.#waiting.size === 0) worker.unref();
      resolve(answer.ok ? { status: 'success' } : { status: 'failure', error: Object.assign(new Error(answer.message), { code: answer.code }) });
    });
    // A thread that failed or ended fails what it held; the next request starts another.
    const ended = (why: string) => () => {
      if (this.#worker === worker) this.#worker = null;
      this.#failAll(why);
    };
    worker.on('error', ended('the export thread failed'));
    worker.on('exit', ended('the export thread ended'));
    this.#worker = worker;
    return worker;
  }

  #failAll(message: string): void {
    for (const resolve of this.#waiting.values()) resolve({ status: 'failure', error: new Error(message) });
    this.#waiting.clear();
  }
}
