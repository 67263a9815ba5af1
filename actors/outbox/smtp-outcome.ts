/**
 * The one place where what nodemailer's SMTP client reported is turned into
 * an attempt's ending (delivery.ts runs the attempt; this says what it came
 * to). Pure: no socket and no clock, so a table test covers every class
 * (test/actors/outbox/smtp-outcome.test.ts).
 *
 * - Before the body's first byte nothing was delivered, so the attempt is
 *   `not-begun` and may be tried again: no connection or a dropped one
 *   (`server-unreachable`), silence past a timeout (`server-unresponsive`),
 *   TLS (`tls-refused`), a refused login (`login-refused`), MAIL FROM or DATA
 *   refused (`sender-refused`, `data-refused`: a 5xx makes it permanent).
 *   Over the server's SIZE (`too-large`) is permanent whatever the code.
 * - Every recipient refused at RCPT is an answer: each recipient's own reply
 *   decides (5xx refused, otherwise still owed), `recipients-refused`.
 * - The body's final reply: a 250 accepts the recipients the server took at
 *   RCPT, and those it refused are refused or owed by their own reply
 *   (`recipient-refused` when any is refused, else `recipient-deferred`); a
 *   4xx/5xx to the body counts for every recipient offered
 *   (`message-refused`).
 * - After the body began, anything but a final reply (a drop, a timeout, a
 *   421 as the server hangs up) is `no-final-reply`: nobody knows whether it
 *   was delivered, and it is never retried by itself.
 *
 * Codes are internal words (docs/sending.md, "Failure codes"), never the
 * server's text, which often quotes the address.
 */
import type { RecipientReply } from '../../runtime/store/outbox/outgoing.ts';

/** The fields of a nodemailer error that classification reads; its message and `response` (the server's text) are never read. */
export type SmtpError = {
  code?: string;
  responseCode?: number;
  /** The command the reply answered (`MAIL FROM`, `RCPT TO`, `DATA`, `AUTH PLAIN`, `CONN`…). */
  command?: string;
  /** On a per-recipient refusal: whom it refused. */
  recipient?: string;
  /** On "every recipient refused": each recipient's own refusal. */
  rejectedErrors?: SmtpError[];
};

/** What nodemailer hands the send's callback on a 250 to the body. */
export type SendInfo = { accepted: string[]; rejectedErrors?: SmtpError[] };

export type OfferedRecipient = { position: number; address: string };

/** The failure codes an attempt can end with; the outbox itself sets the last two when it has no credentials to offer. */
export type FailureCode =
  | 'login-refused'
  | 'tls-refused'
  | 'too-large'
  | 'sender-refused'
  | 'recipients-refused'
  | 'data-refused'
  | 'server-unresponsive'
  | 'server-unreachable'
  | 'smtp-failure'
  | 'message-refused'
  | 'recipient-refused'
  | 'recipient-deferred'
  | 'login-unavailable'
  | 'credential-unreadable';

export type AttemptResult =
  /** The server gave a final reply for each recipient offered (accepted, refused with a 5xx, deferred with a 4xx). */
  | { kind: 'answered'; replies: RecipientReply[]; failure: { code: FailureCode; replyCode: number | null } | null }
  /** It ended before the body's first byte: nothing was delivered. */
  | { kind: 'not-begun'; permanent: boolean; code: FailureCode; replyCode: number | null }
  /** The body began and no final reply came: delivery unknown. */
  | { kind: 'no-final-reply'; code: FailureCode };

/** What ended an attempt, as it stood at that moment (`bodyBegan` is read when it happened, not later). */
export type Ending =
  /** nodemailer's callback for the message (the envelope, then the body). */
  | { by: 'reply'; err: SmtpError | null; info: SendInfo | undefined; bodyBegan: boolean }
  /** A refused connection or login, or the session's `error` or `end` while the attempt held it. */
  | { by: 'failure'; err: SmtpError; bodyBegan: boolean }
  /** `Outbox:SendTimeout` passed. */
  | { by: 'timeout'; bodyBegan: boolean };

/** The internal code of a failure (never the server's text). */
export function failureCode(err: SmtpError): FailureCode {
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

const isPermanent = (replyCode: number | null): boolean => replyCode !== null && replyCode >= 500;

/** The SendTimeout is classified like the socket's own timeout. */
const SEND_TIMEOUT: SmtpError = { code: 'ETIMEDOUT' };

/** Failures of the wire: a reply code on one of these (a 421 as the server hangs up) is no final reply to the body. */
const WIRE_CODES = new Set(['ETIMEDOUT', 'ECONNECTION', 'ESOCKET']);

type EveryRecipientRefused = SmtpError & { rejectedErrors: SmtpError[] };

function everyRecipientRefused(err: SmtpError): err is EveryRecipientRefused {
  return err.code === 'EENVELOPE' && err.command === 'RCPT TO' && err.rejectedErrors !== undefined;
}

/** What an attempt came to. */
export function outcomeOf(ending: Ending, recipients: readonly OfferedRecipient[]): AttemptResult {
  switch (ending.by) {
    case 'timeout':
      return failed(SEND_TIMEOUT, ending.bodyBegan, recipients);
    case 'failure':
      return failed(ending.err, ending.bodyBegan, recipients);
    case 'reply':
      return ending.err === null ? answered(ending.info, recipients) : failed(ending.err, ending.bodyBegan, recipients);
  }
}

/**
 * Whether the session ended its message cleanly and may serve the account's
 * next send (smtp-sessions.ts): a 250 to the body, or every recipient
 * refused at RCPT (the next use's RSET ends that transaction). Any other
 * ending closes it.
 */
export function keepsSession(ending: Ending): boolean {
  if (ending.by !== 'reply') return false;
  return ending.err === null || (!ending.bodyBegan && everyRecipientRefused(ending.err));
}

function failed(err: SmtpError, bodyBegan: boolean, recipients: readonly OfferedRecipient[]): AttemptResult {
  if (bodyBegan) return afterBodyBegan(err, recipients);
  if (everyRecipientRefused(err)) {
    const positions = positionsOf(recipients);
    const replies = err.rejectedErrors.map((e) => recipientReply(e, positions)).filter((r) => r !== null);
    return { kind: 'answered', replies, failure: { code: 'recipients-refused', replyCode: err.responseCode ?? null } };
  }
  const replyCode = err.responseCode ?? null;
  return {
    kind: 'not-begun',
    permanent: err.code === 'EMESSAGE' || (err.code === 'EENVELOPE' && isPermanent(replyCode)),
    code: failureCode(err),
    replyCode,
  };
}

/** A final reply to the body is an answer for every recipient offered; anything else is silence. */
function afterBodyBegan(err: SmtpError, recipients: readonly OfferedRecipient[]): AttemptResult {
  if (err.responseCode === undefined || WIRE_CODES.has(err.code ?? '')) return { kind: 'no-final-reply', code: failureCode(err) };
  const replyCode = err.responseCode;
  const state = isPermanent(replyCode) ? 'refused' : 'pending';
  return {
    kind: 'answered',
    replies: recipients.map((r) => ({ position: r.position, state, replyCode })),
    failure: { code: 'message-refused', replyCode },
  };
}

/** A 250 to the body: the recipients accepted at RCPT, and each refused one by its own reply. */
function answered(info: SendInfo | undefined, recipients: readonly OfferedRecipient[]): AttemptResult {
  const accepted = new Set((info?.accepted ?? []).map((a) => a.toLowerCase()));
  const positions = positionsOf(recipients);
  const refused = (info?.rejectedErrors ?? []).map((e) => recipientReply(e, positions)).filter((r) => r !== null);
  const replies: RecipientReply[] = [
    ...recipients.filter((r) => accepted.has(r.address.toLowerCase())).map((r) => ({ position: r.position, state: 'accepted' as const, replyCode: 250 })),
    ...refused,
  ];
  const permanent = refused.find((r) => r.state === 'refused');
  const failure = permanent ?? refused[0];
  return {
    kind: 'answered',
    replies,
    failure: failure ? { code: permanent ? 'recipient-refused' : 'recipient-deferred', replyCode: failure.replyCode } : null,
  };
}

function positionsOf(recipients: readonly OfferedRecipient[]): ReadonlyMap<string, number> {
  return new Map(recipients.map((r) => [r.address.toLowerCase(), r.position]));
}

/** One recipient's refusal as its reply; null for an address that was not offered. */
function recipientReply(err: SmtpError, positions: ReadonlyMap<string, number>): RecipientReply | null {
  const position = err.recipient === undefined ? undefined : positions.get(err.recipient.toLowerCase());
  if (position === undefined) return null;
  const replyCode = err.responseCode ?? null;
  return { position, state: isPermanent(replyCode) ? 'refused' : 'pending', replyCode };
}
