/**
 * A TCP proxy on a loopback port between the service and a real server (Dovecot), that can add
 * latency, stall the server→client direction, cut connections after a byte count (mid-response),
 * cut everything now, refuse new connections, or hand each server→client chunk to a test's
 * rewriter (`rewrite`), which may change its bytes or end the connection after them. Owns only
 * byte forwarding and its faults; it never parses IMAP (a rewriter that does is the test's).
 */
import { createServer, connect, type Socket } from 'node:net';
import { seededRandom, type Random } from '../../runtime/clock.ts';

export type CutOptions = {
  /** `all` (default): open connections (counting from now) and every later one, until clearCut(). `next`: the next new connection only. `open`: connections open now only. */
  which?: 'all' | 'next' | 'open';
  /** Send a TCP RST instead of a FIN. */
  reset?: boolean;
};

/** What a rewriter makes of one server→client chunk: the bytes to forward, and whether to close the connection after them. */
export type Rewritten = { bytes: Buffer; end?: boolean };
/** Sees every server→client chunk of one connection, in order; `conn` numbers connections from 1 in the order accepted. */
export type Rewriter = (chunk: Buffer, conn: number) => Rewritten;

export type FaultProxy = {
  /** From now on, server→client chunks of every connection, open or new, pass through `rewriter` (null: forwarded as they are). */
  rewrite(rewriter: Rewriter | null): void;
  host: '127.0.0.1';
  port: number;
  /** Latency added to every chunk in both directions, plus up to `jitterMs` (seeded). 0 turns it off. */
  delay(ms: number, jitterMs?: number): void;
  /** Hold server→client bytes (sockets stay open; client→server still flows). */
  stall(): void;
  /** Forward server→client bytes for `n` more bytes per connection, then hold them (mid-response). */
  stallAfterBytes(n: number, options?: Pick<CutOptions, 'which'>): void;
  resume(): void;
  /** Destroy a connection once it has forwarded `n` server→client bytes: exactly `n` reach the client. */
  cutAfterBytes(n: number, options?: CutOptions): void;
  clearCut(): void;
  cutAll(options?: Pick<CutOptions, 'reset'>): void;
  /** While on, accept and immediately close new connections. */
  refuse(on: boolean): void;
  /** Open connections now. */
  readonly connections: number;
  /** Connections accepted since start (refused ones included). */
  readonly accepted: number;
  /** Connections ended by cutAfterBytes or cutAll. */
  readonly cuts: number;
  /** Server→client bytes forwarded, all connections. */
  readonly bytesToClient: number;
  close(): Promise<void>;
};

type Limit = { n: number; reset: boolean };

type Conn = {
  id: number;
  client: Socket;
  upstream: Socket;
  s2c: number;
  cutAt?: Limit;
  stallAt?: number;
  wake: Array<() => void>;
  closed: boolean;
};

const HIGH_WATER = 1 << 20;

export async function startFaultProxy(target: { host: string; port: number }, options: { seed?: number } = {}): Promise<FaultProxy> {
  const random: Random = seededRandom(options.seed ?? 1);
  const open = new Set<Conn>();
  let latency = 0;
  let jitter = 0;
  let stalled = false;
  let refusing = false;
  let rewriter: Rewriter | null = null;
  let cutRule: (Limit & { which: 'all' | 'next' }) | undefined;
  let stallRule: { n: number; which: 'all' | 'next' } | undefined;
  let accepted = 0;
  let cuts = 0;
  let bytesToClient = 0;

  const end = (c: Conn, reset: boolean) => {
    if (c.closed) return;
    c.closed = true;
    open.delete(c);
    for (const s of [c.client, c.upstream]) {
      if (reset && typeof s.resetAndDestroy === 'function' && !s.destroyed) s.resetAndDestroy();
      else s.destroy();
    }
    for (const w of c.wake.splice(0)) w();
  };

  /** Forward `from` → `to` in order, each chunk released at arrival + latency. */
  const forward = (c: Conn, from: Socket, to: Socket, toClient: boolean) => {
    const queue: Array<{ chunk: Buffer; at: number }> = [];
    let queued = 0;
    let pumping = false;
    let ended = false;
    let lastRelease = 0;
    const held = () => toClient && (stalled || (c.stallAt !== undefined && c.s2c >= c.stallAt));
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      while (!c.closed && queue.length > 0) {
        const head = queue[0]!;
        const wait = head.at - Date.now();
        if (wait > 0) {
          await new Promise<void>((r) => {
            const timer = setTimeout(r, wait);
            c.wake.push(() => {
              clearTimeout(timer);
              r();
            });
          });
          continue;
        }
        if (held()) {
          await new Promise<void>((r) => c.wake.push(r));
          continue;
        }
        let chunk = head.chunk;
        if (toClient && c.stallAt !== undefined && c.s2c + chunk.length > c.stallAt) {
          // Forward up to the stall point; the rest waits in the queue.
          const room = c.stallAt - c.s2c;
          head.chunk = chunk.subarray(room);
          chunk = chunk.subarray(0, room);
        } else {
          queue.shift();
        }
        queued -= chunk.length;
        if (toClient && c.cutAt && c.s2c + chunk.length >= c.cutAt.n) {
          const part = chunk.subarray(0, c.cutAt.n - c.s2c);
          c.s2c += part.length;
          bytesToClient += part.length;
          const reset = c.cutAt.reset;
          cuts++;
          if (part.length > 0) to.write(part, () => end(c, reset));
          else end(c, reset);
          // Make sure the cut happens even if the write callback never comes.
          setTimeout(() => end(c, reset), 50);
          pumping = false;
          return;
        }
        if (toClient) {
          c.s2c += chunk.length;
          bytesToClient += chunk.length;
        }
        to.write(chunk);
        if (queued < HIGH_WATER / 2 && from.isPaused()) from.resume();
      }
      pumping = false;
      if (ended && queue.length === 0 && !c.closed) to.end();
    };
    from.on('data', (data: Buffer) => {
      let chunk = data;
      if (toClient && rewriter !== null) {
        if (ended) return;
        const out = rewriter(data, c.id);
        chunk = out.bytes;
        // The rest of the server's answer is dropped: what was forwarded is the last the client gets.
        if (out.end) {
          ended = true;
          from.pause();
        }
      }
      const now = Date.now();
      const extra = latency > 0 ? latency + Math.floor(random.next() * (jitter + 1)) : 0;
      const at = Math.max(now + extra, lastRelease);
      lastRelease = at;
      queue.push({ chunk, at });
      queued += chunk.length;
      if (queued > HIGH_WATER) from.pause();
      void pump();
    });
    from.on('end', () => {
      ended = true;
      void pump();
    });
  };

  const server = createServer({ allowHalfOpen: true }, (client) => {
    accepted++;
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const c: Conn = { id: accepted, client, upstream, s2c: 0, wake: [], closed: false };
    if (cutRule) {
      c.cutAt = { n: cutRule.n, reset: cutRule.reset };
      if (cutRule.which === 'next') cutRule = undefined;
    }
    if (stallRule) {
      c.stallAt = stallRule.n;
      if (stallRule.which === 'next') stallRule = undefined;
    }
    open.add(c);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('error', () => end(c, false));
    upstream.on('error', () => end(c, false));
    // A clean FIN is forwarded in order by the pump; anything else ends both sides at once.
    for (const s of [client, upstream]) {
      s.on('close', (hadError: boolean) => {
        if (hadError || !s.readableEnded || (client.closed && upstream.closed)) end(c, false);
      });
    }
    forward(c, client, upstream, false);
    forward(c, upstream, client, true);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  const wakeAll = () => {
    for (const c of open) for (const w of c.wake.splice(0)) w();
  };

  return {
    host: '127.0.0.1',
    port,
    rewrite(r) {
      rewriter = r;
    },
    delay(ms, jitterMs = 0) {
      latency = ms;
      jitter = jitterMs;
    },
    stall() {
      stalled = true;
    },
    stallAfterBytes(n, o = {}) {
      const which = o.which ?? 'all';
      if (which !== 'next') for (const c of open) c.stallAt = c.s2c + n;
      stallRule = which === 'open' ? undefined : { n, which };
    },
    resume() {
      stalled = false;
      stallRule = undefined;
      for (const c of open) c.stallAt = undefined;
      wakeAll();
    },
    cutAfterBytes(n, o = {}) {
      const which = o.which ?? 'all';
      const reset = o.reset ?? false;
      if (which !== 'next') for (const c of open) c.cutAt = { n: c.s2c + n, reset };
      cutRule = which === 'open' ? undefined : { n, reset, which };
      wakeAll();
    },
    clearCut() {
      cutRule = undefined;
      for (const c of open) c.cutAt = undefined;
    },
    cutAll(o = {}) {
      for (const c of [...open]) {
        cuts++;
        end(c, o.reset ?? false);
      }
    },
    refuse(on) {
      refusing = on;
    },
    get connections() {
      return open.size;
    },
    get accepted() {
      return accepted;
    },
    get cuts() {
      return cuts;
    },
    get bytesToClient() {
      return bytesToClient;
    },
    close() {
      for (const c of [...open]) end(c, false);
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
