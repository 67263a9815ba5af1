/**
 * An imapflow client logged in to a harness IMAP server (Dovecot, Cyrus) as one of its users,
 * quiet (no logger) and bounded in time. Owns only client construction and the `ImapPeer` shape
 * every harness server has; the harness helpers and tests share it.
 */
import { ImapFlow } from 'imapflow';

/** What a client needs to reach a harness server. */
export type ImapPeer = {
  host: string;
  port: number;
  tlsPort?: number;
  /** PEM of the server's self-signed certificate, when it serves TLS. */
  certificate?: string;
  users: Array<{ user: string; password: string }>;
};

export type ClientOptions = {
  /** Connect here instead (e.g. a fault proxy in front of Dovecot). */
  port?: number;
  /** Implicit TLS on the server's `tlsPort`, trusting the harness certificate. */
  tls?: boolean;
  /** Upgrade a plain connection with STARTTLS (needs a Dovecot started with `tls`). */
  starttls?: boolean;
  /** Socket inactivity timeout handed to imapflow (default 30 s). */
  socketTimeout?: number;
};

export function passwordOf(server: ImapPeer, user: string): string {
  const found = server.users.find((u) => u.user === user);
  if (!found) throw new Error(`no such harness user ${user}`);
  return found.password;
}

export function imapClient(server: ImapPeer, user: string, options: ClientOptions = {}): ImapFlow {
  const tls = options.tls === true;
  if ((tls || options.starttls) && !server.certificate) throw new Error('start the server with { tls: true } first');
  return new ImapFlow({
    host: server.host,
    port: options.port ?? (tls ? server.tlsPort! : server.port),
    secure: tls,
    doSTARTTLS: options.starttls === true,
    auth: { user, pass: passwordOf(server, user) },
    logger: false,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: options.socketTimeout ?? 30_000,
    ...(server.certificate ? { tls: { ca: server.certificate, servername: 'localhost' } } : {}),
  });
}

/** Connect, run `fn`, always log out (or close if logout fails). */
export async function withImap<T>(server: ImapPeer, user: string, fn: (client: ImapFlow) => Promise<T>, options?: ClientOptions): Promise<T> {
  const client = imapClient(server, user, options);
  client.on('error', () => {
    // surfaced through the pending command instead
  });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.logout().catch(() => client.close());
  }
}
