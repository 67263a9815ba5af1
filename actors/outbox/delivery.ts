/**
 * One delivery attempt of one send over nodemailer's SMTP client
 * (`SMTPConnection`, the connection its SMTP transport is built on: the
 * transport hides the moment the body begins, which decides whether a lost
 * answer may be retried).
 *
 * What an attempt can end as:
 * - `answered`: the server gave a final reply for each recipient offered
 *   (accepted after the body's 250; refused with a 5xx; deferred with a 4xx);
 * - `not-begun`: it ended before the body's first byte (no connection, login
 *   refused, MAIL FROM refused, the server's SIZE exceeded): nothing was
 *   delivered, so it may be tried again (or is refused, when permanent);
 * - `no-final-reply`: the body began and no final reply came (connection
 *   dropped, `SendTimeout` passed). Nobody knows whether it was delivered.
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
import type { RecipientReply } from '../../runtime/store/outbox/outgoing.ts';
import type { OutboxConfig } from './protocol.ts';
import { SmtpSession, type SmtpSessions } from './smtp-sessions.ts';

type SmtpConfig = NonNullable<OutboxConfig['accounts'][number]['smtp']>;

export type Offer = {
  accountId: string;
  envelopeFrom: string;
  raw: Uint8Array;
  /** The recipients still owed, with their positions. */
  recipients: ReadonlyArray<{ position: number; address: string }>;
};

export type Credentials = { password: string } | { accessToken: string } | null;

export type AttemptResult =
  | { kind: 'answered'; replies: RecipientReply[]; failure: { code: string; replyCode: number | null } | null }
  | { kind: 'not-begun'; permanent: boolean; code: string; replyCode: number | null }
  | { kind: 'no-final-reply'; code: string };

type SmtpError = Error & { code?: string; responseCode?: number; command?: string; recipient?: string; rejectedErrors?: SmtpError[] };

/** The internal code of a failure that ended an attempt before the body (a word of docs/sending.md, never the server's text). */
function codeOf(err: SmtpError): string {
  if (err.code === 'EAUTH') return 'login-refused';
  if (err.code === 'ETLS') return 'tls-refused';
  if (err.code === 'EMESSAGE') return 'too-large';
  if (err.code === 'EENVELOPE' && err.command === 'MAIL FROM') return 'sender-refused';
  if (err.code === 'EENVELOPE' && err.command === 'RCPT TO') return 'recipients-refused';
  if (err.code === 'EENVELOPE' && err.command === 'DATA') return 'data-refused';
  if (err.code === 'ETIMEDOUT') return 'server-unresponsive';
  if (err.code === 'ECONNECTION' || err.code === 'EDNS' || err.code === 'ESOCKET') return 'server-unreachable';
  return 'smtp-failure';
}

const isPermanent = (replyCode: number | null | undefined): boolean => replyCode !== null && replyCode !== undefined && replyCode >= 500;

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

function loginData(smtp: SmtpConfig, credentials: Credentials): Parameters<SMTPConnection['login']>[0] | null {
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
  } as unknown as Parameters<SMTPConnection['login']>[0];
}

/** The body, handed to nodemailer after DATA's 354; its first read runs `onBegins` before any byte is given out. */
function bodyStream(raw: Uint8Array, onBegins: () => void): Readable {
  let begun = false;
  return new Readable({
    read() {
      if (begun) return;
      begun = true;
      try {
        onBegins();
      } catch (err) {
        this.destroy(err as Error);
        return;
      }
      this.push(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
      this.push(null);
    },
  });
}

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
  // Before this send's MAIL FROM: a reused session whose RSET failed is closed here, no failure of the send.
  const reused = await sessions.take(offer.accountId, timeoutMs);
  // Only a new session reads the credentials (and, as before, ahead of the certificate).
  const login = reused === null ? loginData(smtp, await credentials()) : null;
  const fresh = reused === null ? { login, options: connectionOptions(smtp, offer.accountId, timeoutMs) } : null;
  // Loaded on the first new session, not when the outbox starts.
  const session = reused ?? new SmtpSession(new (await import('nodemailer/lib/smtp-connection')).default(fresh!.options));
  const connection = session.connection;
  let bodyBegan = false;
  let finished = false;
  const positions = new Map(offer.recipients.map((r) => [r.address.toLowerCase(), r.position]));
  return new Promise<AttemptResult>((resolve) => {
    /** True when this result is the attempt's ending (the first one). */
    const finish = (result: AttemptResult): boolean => {
      if (finished) return false;
      finished = true;
      resolve(result);
      return true;
    };
    const failed = (err: SmtpError): boolean => {
      if (bodyBegan) {
        // A final reply to the body (err.command DATA with a code) is an answer for every recipient offered; anything else is silence.
        if (err.responseCode !== undefined && !/^(ETIMEDOUT|ECONNECTION|ESOCKET)$/.test(err.code ?? '')) {
          const state = isPermanent(err.responseCode) ? 'refused' : 'pending';
          const replies = offer.recipients.map((r) => ({ position: r.position, state, replyCode: err.responseCode ?? null }) as RecipientReply);
          return finish({ kind: 'answered', replies, failure: { code: 'message-refused', replyCode: err.responseCode } });
        }
        return finish({ kind: 'no-final-reply', code: codeOf(err) });
      }
      if (err.code === 'EENVELOPE' && err.command === 'RCPT TO' && err.rejectedErrors) {
        // Every recipient was refused at RCPT: each one's reply is its answer.
        const replies = err.rejectedErrors.map((e) => replyOf(e, positions));
        return finish({
          kind: 'answered',
          replies: replies.filter((r) => r !== null),
          failure: { code: 'recipients-refused', replyCode: err.responseCode ?? null },
        });
      }
      const replyCode = err.responseCode ?? null;
      return finish({
        kind: 'not-begun',
        permanent: err.code === 'EMESSAGE' || (err.code === 'EENVELOPE' && isPermanent(replyCode)),
        code: codeOf(err),
        replyCode,
      });
    };
    const timer = setTimeout(() => {
      failed(Object.assign(new Error('SendTimeout passed'), { code: 'ETIMEDOUT' }));
      session.close();
    }, timeoutMs);
    timer.unref();
    session.listen(failed);
    const send = (): void => {
      const body = bodyStream(offer.raw, () => {
        if (!onBodyBegins()) throw new Error('claim lost');
        bodyBegan = true;
      });
      connection.send(
        { from: offer.envelopeFrom, to: offer.recipients.map((r) => r.address), size: offer.raw.byteLength } as Parameters<SMTPConnection['send']>[0],
        body,
        (err: SmtpError | null, info?: { accepted: string[]; rejectedErrors?: SmtpError[] }) => {
          clearTimeout(timer);
          if (err) {
            // Every recipient refused at RCPT is a clean ending too (the next use's RSET ends the transaction); any other error closes.
            const refusedAtRcpt = !bodyBegan && err.code === 'EENVELOPE' && err.command === 'RCPT TO' && err.rejectedErrors !== undefined;
            if (failed(err) && refusedAtRcpt) sessions.release(offer.accountId, session);
            else session.close();
            return;
          }
          const accepted = new Set((info?.accepted ?? []).map((a) => a.toLowerCase()));
          const refused = (info?.rejectedErrors ?? []).map((e) => replyOf(e, positions)).filter((r) => r !== null);
          const replies: RecipientReply[] = [
            ...offer.recipients
              .filter((r) => accepted.has(r.address.toLowerCase()))
              .map((r) => ({ position: r.position, state: 'accepted' as const, replyCode: 250 })),
            ...refused,
          ];
          const permanent = refused.find((r) => r.state === 'refused');
          const failure = permanent ?? refused[0];
          const ended = finish({
            kind: 'answered',
            replies,
            failure: failure ? { code: permanent ? 'recipient-refused' : 'recipient-deferred', replyCode: failure.replyCode } : null,
          });
          if (ended) sessions.release(offer.accountId, session);
          else session.close();
        },
      );
    };
    if (fresh === null) return send();
    connection.connect(() => {
      if (fresh.login === null) return send();
      connection.login(fresh.login, (err: SmtpError | null) => {
        if (err) {
          clearTimeout(timer);
          failed(err);
          session.close();
          return;
        }
        send();
      });
    });
  });
}

function replyOf(err: SmtpError, positions: ReadonlyMap<string, number>): RecipientReply | null {
  const position = err.recipient === undefined ? undefined : positions.get(err.recipient.toLowerCase());
  if (position === undefined) return null;
  const replyCode = err.responseCode ?? null;
  return { position, state: isPermanent(replyCode) ? 'refused' : 'pending', replyCode };
}
