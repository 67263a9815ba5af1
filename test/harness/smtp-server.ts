/**
 * A real SMTP server for tests and benchmarks: the `smtp-server` package in-process on 127.0.0.1,
 * that records what it accepted and can refuse, cut or stall on command.
 *
 * - `security`: `None`, `StartTls` (plain, advertises STARTTLS; AUTH only after it) or `Tls`
 *   (implicit TLS), with a self-signed certificate for 127.0.0.1/localhost made once per process.
 * - `auth` (PLAIN, LOGIN) and `xoauth2` make authentication mandatory; wrong credentials get 535
 *   (`xoauth2` may answer asynchronously, e.g. after introspecting the token).
 * - `rcpt` and `data` decide each recipient and each message; both can be swapped mid-test.
 * - `{ acceptAfterMs }` keeps a message as soon as it is whole and answers 250 only after a delay,
 *   as a server that queues at the final dot and is slow to say so.
 * - `stop()` closes the listener and every open connection; `start()` listens again on the same port.
 *
 * `deliveries` holds only messages answered (or, with `acceptAfterMs`, about to be answered) with a
 * final 250, byte for byte as the client sent them (dot-unstuffed, without the terminating `.`);
 * `onDelivery` is told of each as it is kept.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { makeCertificate, trackDir } from './processes.ts';

export type SmtpSecurity = 'StartTls' | 'Tls' | 'None';

/** An SMTP reply other than success; `message` defaults to a neutral text. */
export type SmtpRefusal = { code: number; message?: string };

export type RcptDecision = 'accept' | SmtpRefusal;

/**
 * `drop-mid-data`: the socket is destroyed when the first body bytes after 354 arrive, with no
 * reply. A body that fits one socket read (under ~64 KiB on loopback) is then already whole:
 * for a cut while the client is still writing, send a larger one.
 * `stall-mid-data`: the whole body is read and never answered (the client must time out).
 * `accept` and a refusal are answered once the whole message is in.
 * `{ acceptAfterMs }`: a slow 250, after the delay. `keptAt: 'dot'` (the default) keeps the message
 * (in `deliveries`) once it is whole, as a server that queues it at the final dot: a client that
 * goes away meanwhile never hears the 250, yet the message was delivered, which a sender cannot
 * tell from a loss. `keptAt: 'answer'` keeps it only if the client is still there to be answered.
 */
export type DataDecision = 'accept' | SmtpRefusal | 'drop-mid-data' | 'stall-mid-data' | { acceptAfterMs: number; keptAt?: 'dot' | 'answer' };

/**
 * What `data` decides on. It is asked when the body starts (a cut must be decided before the
 * body is in), so it sees the envelope but not the message.
 */
export type DataTransaction = {
  envelopeFrom: string;
  recipients: string[];
  authenticatedUser: string | undefined;
  /** 1 for the first DATA command this server saw, counting across connections and restarts. */
  dataCommand: number;
};

export type Delivery = {
  /** MAIL FROM; '' for the null sender. */
  envelopeFrom: string;
  /** The RCPT TO addresses accepted in this transaction, in order. */
  recipients: string[];
  /** The message as received (dot-unstuffed, without the final `.` line). */
  raw: Buffer;
  receivedAt: Date;
  authenticatedUser: string | undefined;
};

/** A DATA phase the harness ended on purpose without a final reply. */
export type Interrupted = { fault: 'drop-mid-data' | 'stall-mid-data'; envelopeFrom: string; recipients: string[]; bytesReceived: number };

export type SmtpServerOptions = {
  security: SmtpSecurity;
  /** A fixed port (e.g. from `reservePort()`), so that a stop/start cycle cannot lose it; default ephemeral. */
  port?: number;
  /** Require AUTH PLAIN or LOGIN with these credentials. */
  auth?: { username: string; password: string };
  /** Also (or only, without `auth`) accept XOAUTH2 when this returns (or resolves to) true; a rejection refuses too. */
  xoauth2?: (user: string, accessToken: string) => boolean | Promise<boolean>;
  /** SIZE limit advertised; a larger message gets 552. */
  size?: number;
  rcpt?: (address: string) => RcptDecision;
  data?: (transaction: DataTransaction) => DataDecision;
  /** Told of each message as it is kept, just before its 250 is written (the demo prints them; benchmarks time the 250 by it). */
  onDelivery?: (delivery: Delivery) => void;
};

export type SmtpSink = {
  host: '127.0.0.1';
  port: number;
  security: SmtpSecurity;
  /** PEM of the self-signed certificate, to trust explicitly (`tls: { ca }`); null for a plain (`None`) server, which has none. */
  certificatePem: string | null;
  /** The same certificate as a file (for the service's `TrustedCertificate` reference); null for a plain server. */
  certificateFile: string | null;
  /** Replaceable at any time; applies from the next RCPT TO. */
  rcpt: (address: string) => RcptDecision;
  /** Replaceable at any time; applies from the next DATA. */
  data: (transaction: DataTransaction) => DataDecision;
  readonly deliveries: Delivery[];
  readonly interrupted: Interrupted[];
  /** Connections accepted since the sink was made (all starts). */
  readonly connections: number;
  /** DATA commands answered with 354. */
  readonly dataCommands: number;
  /** RCPT TO commands refused by `rcpt`. */
  readonly refusedRecipients: number;
  readonly listening: boolean;
  /** Deliveries with `address` among their recipients (case-insensitive). */
  deliveriesFor(address: string): Delivery[];
  /** Resolves with the deliveries once there are at least `n`; rejects after `timeoutMs`. */
  waitForDeliveries(n: number, timeoutMs: number): Promise<Delivery[]>;
  /** Close the listener and destroy every open connection (stalled ones included). Idempotent. */
  stop(): Promise<void>;
  /** Listen again on the same port. */
  start(): Promise<void>;
};

type Certificate = { pem: string; file: string; key: string };

// One certificate per process: openssl takes a while, and every server's name is the same.
let certificate: Promise<Certificate> | undefined;
function processCertificate(): Promise<Certificate> {
  certificate ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-smtp-'));
    trackDir(dir);
    const made = await makeCertificate(dir);
    return { pem: made.pem, file: made.cert, key: readFileSync(made.key, 'utf8') };
  })();
  return certificate;
}

function refusal(r: SmtpRefusal, fallback: string): Error {
  return Object.assign(new Error(r.message ?? fallback), { responseCode: r.code });
}

export async function startSmtpServer(options: SmtpServerOptions): Promise<SmtpSink> {
  // A plain server makes no certificate, so the demo's sink needs no openssl.
  const cert = options.security === 'None' ? null : await processCertificate();
  const deliveries: Delivery[] = [];
  const interrupted: Interrupted[] = [];
  const waiters = new Set<() => void>();
  let connections = 0;
  let dataCommands = 0;
  let refusedRecipients = 0;
  let server: SMTPServer | undefined;
  let port = options.port ?? 0;

  const methods = [...(options.auth ? ['PLAIN', 'LOGIN'] : []), ...(options.xoauth2 ? ['XOAUTH2'] : [])];
  const authRequired = methods.length > 0;
  const disabled = [...(options.security === 'None' ? ['STARTTLS'] : []), ...(authRequired ? [] : ['AUTH'])];

  const envelopeOf = (session: SMTPServerSession) => ({
    envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    recipients: session.envelope.rcptTo.map((r) => r.address),
    authenticatedUser: typeof session.user === 'string' ? session.user : undefined,
  });

  const onData = (stream: SMTPServerDataStream, session: SMTPServerSession, reply: (err?: Error | null, message?: string) => void): void => {
    dataCommands += 1;
    const dataCommand = dataCommands;
    const envelope = envelopeOf(session);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let decision: DataDecision | undefined;
    const decide = (): DataDecision => {
      decision ??= sink.data({ ...envelope, dataCommand });
      return decision;
    };
    let dropped = false;
    const drop = (bytesReceived: number): void => {
      if (dropped) return;
      dropped = true;
      interrupted.push({ fault: 'drop-mid-data', ...envelope, bytesReceived });
      // The session names no socket; its connection (same id) in the server's set does.
      for (const c of server?.connections ?? []) if (c.id === session.id) c._socket.destroy();
    };
    // smtp-server destroys the stream when the client goes away mid-body; unheard, that would throw.
    stream.on('error', () => undefined);
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (decide() === 'drop-mid-data') return drop(bytes);
      chunks.push(chunk);
    });
    stream.on('end', () => {
      const d = decide();
      if (d === 'drop-mid-data') return drop(bytes); // an empty body: nothing came before the end
      if (d === 'stall-mid-data') {
        interrupted.push({ fault: 'stall-mid-data', ...envelope, bytesReceived: bytes });
        return; // no reply, ever: smtp-server does not time out a session waiting on its onData
      }
      if (stream.sizeExceeded) return reply(refusal({ code: 552 }, `Message exceeds fixed maximum message size ${options.size}`));
      if (d !== 'accept' && !('acceptAfterMs' in d)) return reply(refusal(d, 'Message refused'));
      const keep = (): string => {
        const delivery = { ...envelope, raw: Buffer.concat(chunks), receivedAt: new Date() };
        deliveries.push(delivery);
        options.onDelivery?.(delivery);
        for (const w of [...waiters]) w();
        return `OK: queued as ${deliveries.length}`;
      };
      if (d === 'accept') return reply(null, keep());
      const kept = d.keptAt === 'answer' ? null : keep();
      setTimeout(() => {
        // A client gone meanwhile leaves its connection's set; smtp-server writes nothing to a socket that is gone.
        const there = [...(server?.connections ?? [])].some((c) => c.id === session.id && !c._socket.destroyed);
        if (kept !== null) return reply(null, kept);
        if (there) reply(null, keep());
      }, d.acceptAfterMs);
    });
  };

  const serverOptions = (): SMTPServerOptions => ({
    secure: options.security === 'Tls',
    ...(cert ? { key: cert.key, cert: cert.pem } : {}),
    name: 'localhost',
    logger: false,
    disableReverseLookup: true,
    size: options.size,
    rejectOversized: options.size !== undefined,
    authMethods: methods,
    authOptional: !authRequired,
    // Only a plain server without STARTTLS takes AUTH in the clear; StartTls demands TLS first (538).
    allowInsecureAuth: options.security === 'None',
    disabledCommands: disabled,
    closeTimeout: 1_000,
    onConnect(_session, callback) {
      connections += 1;
      callback();
    },
    onAuth(auth, _session, callback) {
      const user = auth.username ?? '';
      if (auth.method === 'XOAUTH2') {
        // A verifier may ask elsewhere (an introspection endpoint): the answer waits for it.
        const verify = options.xoauth2;
        void (async () => (verify ? await verify(user, auth.accessToken ?? '') : false))()
          .catch(() => false)
          .then((ok) => (ok ? callback(null, { user }) : callback(null, { data: { status: '401', schemes: 'bearer' } })));
        return;
      }
      if (options.auth && user === options.auth.username && auth.password === options.auth.password) return callback(null, { user });
      callback(refusal({ code: 535 }, 'Authentication credentials invalid'));
    },
    onRcptTo(address, _session, callback) {
      const d = sink.rcpt(address.address);
      if (d === 'accept') return callback();
      refusedRecipients += 1;
      callback(refusal(d, 'Recipient refused'));
    },
    onData,
  });

  const listen = async (): Promise<void> => {
    if (server) throw new Error('the SMTP server is already listening');
    const s = new SMTPServer(serverOptions());
    // Client-side resets surface as server errors; without a listener they would crash the test.
    s.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      s.server.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.server.off('error', reject);
        resolve();
      });
    });
    port = (s.server.address() as { port: number }).port;
    server = s;
  };

  await listen();

  const sink: SmtpSink = {
    host: '127.0.0.1',
    port,
    security: options.security,
    certificatePem: cert?.pem ?? null,
    certificateFile: cert?.file ?? null,
    rcpt: options.rcpt ?? (() => 'accept'),
    data: options.data ?? (() => 'accept'),
    get deliveries() {
      return deliveries;
    },
    get interrupted() {
      return interrupted;
    },
    get connections() {
      return connections;
    },
    get dataCommands() {
      return dataCommands;
    },
    get refusedRecipients() {
      return refusedRecipients;
    },
    get listening() {
      return server !== undefined;
    },
    deliveriesFor(address) {
      const a = address.toLowerCase();
      return deliveries.filter((d) => d.recipients.some((r) => r.toLowerCase() === a));
    },
    waitForDeliveries(n, timeoutMs) {
      if (deliveries.length >= n) return Promise.resolve([...deliveries]);
      return new Promise((resolve, reject) => {
        const check = () => {
          if (deliveries.length < n) return;
          finish();
          resolve([...deliveries]);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${deliveries.length} of ${n} deliveries after ${timeoutMs} ms`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    async stop() {
      const s = server;
      if (!s) return;
      server = undefined;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      // Destroyed here rather than by smtp-server's close, which waits `closeTimeout` and then says 421.
      // Not mid-STARTTLS: destroying the plain socket under a TLS handshake can crash Node; the
      // timeout ends those. Sockets still in an implicit-TLS handshake are smtp-server's own to end.
      for (const c of s.connections) if (!c._upgrading) c._socket.destroy();
      await closed;
    },
    start: listen,
  };
  return sink;
}
