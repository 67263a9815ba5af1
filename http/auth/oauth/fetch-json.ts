/**
 * The one HTTP read of `http/auth/oauth/`: GET a JSON document from an
 * authorization server (its metadata, its key set) with undici, bounded in
 * time and size, redirects not followed. It never throws: every outcome is a
 * value, because a server that misbehaves must never bring a request (or
 * the process) down, only make its tokens unverifiable for a while.
 *
 * Importable from `http/auth/oauth/` only.
 */
import type { Dispatcher } from 'undici';
import { undici } from '../../../runtime/http-retry/undici.ts';

export type Fetched = { kind: 'ok'; json: unknown } | { kind: 'failed'; reason: string; status?: number };
export type FetchJson = (url: string) => Promise<Fetched>;

export type FetchJsonOptions = {
  /** Whole exchange, connection to last byte (default 5 s). */
  timeoutMs?: number;
  /** Largest document read (default 512 KiB); a longer one is a failure. */
  maxBytes?: number;
  dispatcher?: Dispatcher;
};

export function fetchJson(options: FetchJsonOptions = {}): FetchJson {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 512 * 1024;
  return async (url) => {
    try {
      const { request } = await undici();
      const res = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json' },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
        ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      });
      if (res.statusCode !== 200) {
        // Drain so the connection is reusable; the body is not wanted.
        await res.body.dump().catch(() => undefined);
        return { kind: 'failed', reason: 'status', status: res.statusCode };
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) {
          res.body.destroy();
          return { kind: 'failed', reason: 'too-large', status: 200 };
        }
        chunks.push(chunk as Buffer);
      }
      try {
        return { kind: 'ok', json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
      } catch {
        return { kind: 'failed', reason: 'not-json', status: 200 };
      }
    } catch (err) {
      const name = err instanceof Error ? ((err as { code?: string }).code ?? err.name) : 'unknown';
      return { kind: 'failed', reason: name };
    }
  };
}
