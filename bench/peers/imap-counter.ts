/**
 * A TCP proxy in front of an IMAP server that counts what a client costs it:
 * connections (accepted, open now, most at once) and the client's commands
 * by name (a line `<tag> <NAME> …`, `UID <NAME>` counted as that; `DONE`,
 * which ends an IDLE, counted too). It reads only the client's lines, never
 * forwards anything differently, and binds its listener to port 0.
 * Literal contents (APPEND) would be miscounted; the clients measured here
 * send none.
 */
import { createServer, type Server, type Socket, connect } from 'node:net';

export type ImapCounter = {
  port: number;
  /** Commands by name since the last reset. */
  commands(): Record<string, number>;
  total(): number;
  open(): number;
  accepted(): number;
  maxOpen(): number;
  /** Zero the command counts and the most-at-once (to the connections open now). */
  reset(): void;
  close(): Promise<void>;
};

export async function startImapCounter(upstream: { host: string; port: number }): Promise<ImapCounter> {
  let counts: Record<string, number> = {};
  let accepted = 0;
  let maxOpen = 0;
  const sockets = new Set<Socket>();
  const count = (line: string): void => {
    if (line === 'DONE') {
      counts.DONE = (counts.DONE ?? 0) + 1;
      return;
    }
    const m = /^[A-Za-z0-9.]+ (?:UID )?([A-Za-z]+)/.exec(line);
    if (!m) return;
    const name = m[1]!.toUpperCase();
    counts[name] = (counts[name] ?? 0) + 1;
  };
  const server: Server = createServer((client) => {
    accepted += 1;
    const up = connect(upstream.port, upstream.host);
    sockets.add(client);
    sockets.add(up);
    maxOpen = Math.max(maxOpen, open());
    let pending = '';
    client.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      let at = pending.indexOf('\r\n');
      while (at >= 0) {
        count(pending.slice(0, at));
        pending = pending.slice(at + 2);
        at = pending.indexOf('\r\n');
      }
      if (pending.length > 65_536) pending = '';
    });
    client.pipe(up);
    up.pipe(client);
    const end = (): void => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
    };
    client.on('error', end);
    up.on('error', end);
    client.on('close', end);
    up.on('close', end);
  });
  const open = (): number => [...sockets].length / 2;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the counting proxy has no port');
  return {
    port: address.port,
    commands: () => ({ ...counts }),
    total: () => Object.values(counts).reduce((a, b) => a + b, 0),
    open,
    accepted: () => accepted,
    maxOpen: () => maxOpen,
    reset() {
      counts = {};
      maxOpen = open();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
