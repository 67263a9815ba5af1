/**
 * One delivery attempt of one send over nodemailer's SMTP client
 * (`SMTPConnection`, the connection its SMTP transport is built on: the
 * transport hides the moment the body begins, which decides whether a lost
 * answer may be retried). What the attempt came to — `answered`,
 * `not-begun` or `no-final-reply` — is decided in smtp-outcome.ts.
 *
 * `onBodyBegins` runs, and must have written durably, before the first byte
 * of the body is handed to the socket: the body is a stream whose first read
 * calls it. Nothing here logs an address, a reply text or the message:
 * nodemailer's logger is off and its error messages (which quote the
 * server's reply, often with the address) are reduced to codes.
 */
import { Readable } from 'node:stream';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import { readSecret } from '../../runtime/secret-ref.ts';
import type { OutboxConfig } from './protocol.ts';
import { type AttemptResult, type Ending, type OfferedRecipient, type SmtpError, keepsSession, outcomeOf } from './smtp-outcome.ts';
import { SmtpSession, type SmtpSessions } from './smtp-sessions.ts';

export type { AttemptResult } from './smtp-outcome.ts';

type SmtpConfig = NonNullable<OutboxConfig['accounts'][number]['smtp']>;
type LoginData = Parameters<SMTPConnection['login']>[0];

export type Offer = {
  accountId: string;
  envelopeFrom: string;
  raw: Uint8Array;
  /** The recipients still owed, with their positions. */
  recipients: readonly OfferedRecipient[];
};

export type Credentials = { password: string } | { accessToken: string } | null;

/**
 * Offer one send to the account's SMTP server, on an idle session of the
 * account (smtp-sessions.ts) or a new one. `credentials` is asked only for a
 * new session. `onBodyBegins` returns false when the send may not go on (the
 * claim was lost): the attempt then stops before the body, as not begun.
 */
export async function attemptDelivery(
  offer: Offer,
  smtp: SmtpConfig,
  credentials: () => Promise<Credentials>,
  timeoutMs: number,
  onBodyBegins: () => boolean,
  sessions: SmtpSessions,
): Promise<AttemptResult> {
  const held = await sessionFor(offer.accountId, smtp, credentials, timeoutMs, sessions);
  const body = new Body(offer.raw, onBodyBegins);
  const first = new FirstEnding();
  const timer = setTimeout(() => first.take({ by: 'timeout', bodyBegan: body.began }), timeoutMs);
  timer.unref();
  held.session.listen((err) => first.take({ by: 'failure', err, bodyBegan: body.began }));
  // The exchange rejects only on a defect (a throw in nodemailer or here): it reaches the caller, which crashes the outbox.
  const ending = await Promise.race([first.ending, exchange(held, offer, body, first).then(() => first.ending)]);
  clearTimeout(timer);
  if (keepsSession(ending)) sessions.release(offer.accountId, held.session);
  else held.session.close();
  return outcomeOf(ending, offer.recipients);
}

/** The session an attempt runs on: an idle one of the account (reset, logged in already), or a new one to connect and log in. */
type Held = { session: SmtpSession; isNew: boolean; login: LoginData | null };

async function sessionFor(
  accountId: string,
  smtp: SmtpConfig,
  credentials: () => Promise<Credentials>,
  timeoutMs: number,
  sessions: SmtpSessions,
): Promise<Held> {
  // Before this send's MAIL FROM: a reused session whose RSET failed is closed here, no failure of the send.
  const reused = await sessions.take(accountId, timeoutMs);
  if (reused !== null) return { session: reused, isNew: false, login: null };
  // Only a new session reads the credentials (and ahead of the certificate).
  const login = loginData(smtp, await credentials());
  const options = connectionOptions(smtp, accountId, timeoutMs);
  // Loaded on the first new session, not when the outbox starts.
  const { default: Connection } = await import('nodemailer/lib/smtp-connection');
  return { session: new SmtpSession(new Connection(options)), isNew: true, login };
}

/** Connect and log in (a new session), then send the message; each step's failure is taken as the ending in its own callback. */
async function exchange(held: Held, offer: Offer, body: Body, first: FirstEnding): Promise<void> {
  const connection = held.session.connection;
  if (held.isNew) {
    // A connection refused, or closed before the greeting, ends the attempt as the login or send on it would have: not begun.
    if (!(await step(first, (done) => connection.connect(done)))) return;
    const login = held.login;
    if (login !== null && !(await step(first, (done) => connection.login(login, done)))) return;
  }
  const envelope = { from: offer.envelopeFrom, to: offer.recipients.map((r) => r.address), size: offer.raw.byteLength };
  await new Promise<void>((resolve) =>
    connection.send(envelope, body.stream, (err, info) => {
      first.take({ by: 'reply', err, info, bodyBegan: body.began });
      resolve();
    }),
  );
}

/** One nodemailer step before the message: true when it succeeded and the attempt goes on. */
function step(first: FirstEnding, run: (done: (err?: SmtpError | null) => void) => void): Promise<boolean> {
  return new Promise((resolve) =>
    run((err) => {
      if (err) first.take({ by: 'failure', err, bodyBegan: false });
      resolve(!err && !first.ended);
    }),
  );
}

/**
 * The attempt's ending: the first of the message's reply, a failure (a
 * refused connection or login, the session's error or end) and the
 * SendTimeout. Taken in the event's own callback, not after an await:
 * nodemailer reports one fault several ways in a row (an `error`, an `end`,
 * then the pending send's callback), and the first must win.
 */
class FirstEnding {
  private taken: Ending | null = null;
  private resolve: (ending: Ending) => void = () => {};
  readonly ending: Promise<Ending> = new Promise((resolve) => {
    this.resolve = resolve;
  });

  get ended(): boolean {
    return this.taken !== null;
  }

  take(ending: Ending): void {
    if (this.taken !== null) return;
    this.taken = ending;
    this.resolve(ending);
  }
}

/**
 * The body, handed to nodemailer after DATA's 354. Its first read asks
 * `mayBegin` (the durable body-began write) before any byte is given out; a
 * false or a throw destroys the stream, so the attempt ends as not begun.
 */
class Body {
  began = false;
  readonly stream: Readable;

  constructor(raw: Uint8Array, mayBegin: () => boolean) {
    let read = false;
    this.stream = new Readable({
      read: () => {
        if (read) return;
        read = true;
        try {
          if (!mayBegin()) throw new Error('claim lost');
        } catch (err) {
          this.stream.destroy(err as Error);
          return;
        }
        this.began = true;
        this.stream.push(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
        this.stream.push(null);
      },
    });
  }
}

/** The connection options of an account's SMTP server; the certificate is read at each connection, like the password. */
function connectionOptions(smtp: SmtpConfig, accountId: string, timeoutMs: number): ConstructorParameters<typeof SMTPConnection>[0] {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.security === 'Tls',
    requireTLS: smtp.security === 'StartTls',
    ignoreTLS: smtp.security === 'None',
    ...(smtp.trustedCertificateRef
      ? { tls: { ca: readSecret(smtp.trustedCertificateRef, process.env, `Accounts:${accountId}:Smtp:TrustedCertificate`) } }
      : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    logger: false,
    debug: false,
    transactionLog: false,
  };
}

function loginData(smtp: SmtpConfig, credentials: Credentials): LoginData | null {
  if (credentials === null) return null;
  if ('password' in credentials) return { user: smtp.username, pass: credentials.password };
  const token = credentials.accessToken;
  // XOAUTH2 with an access token already redeemed (by the account's sync actor): nodemailer asks this for it.
  return {
    user: smtp.username,
    oauth2: {
      // nodemailer asks again (renew) after a refusal on the same connection: there is no newer token here, so the
      // attempt ends as a refused login and the next one asks the sync actor for a fresh token.
      getToken: (renew: boolean, callback: (err: Error | null, token?: string) => void) =>
        renew ? callback(Object.assign(new Error('token refused'), { code: 'EAUTH' })) : callback(null, token),
      buildXOAuth2Token: (accessToken: string) => Buffer.from(`user=${smtp.username}\u0001auth=Bearer ${accessToken}\u0001\u0001`).toString('base64'),
    },
  } as unknown as LoginData;
}
