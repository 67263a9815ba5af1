/**
 * Opening an IMAP session for an account, and the one place where IMAP and
 * socket failures are mapped to our codes: a refused login is E_IMAP_AUTH
 * (stop and wait for an operator; retrying a wrong password locks accounts),
 * anything on the wire — refused connection, timeout, reset, a cut mid-answer
 * — is E_IMAP_UNRESPONSIVE (defer, back off, retry), and a server answer we
 * cannot use is E_IMAP_PROTOCOL. Only errors imapflow or the socket marked as
 * theirs are mapped; anything else is a defect and is thrown on unchanged
 * (`classifyImapFailure`), so it crashes the actor instead of being recorded
 * as a server outage. A tagged BAD is the server saying our command was
 * malformed: a defect too (`ImapCommandRejected`), never retried as the
 * server's problem (docs/sync.md, "A defect is not an outage").
 *
 * imapflow's own logger is off: it logs commands and responses, which carry
 * subjects and addresses.
 */
import { ImapFlow, type ImapFlowOptions } from 'imapflow';
import { readSecret } from '../../runtime/secret-ref.ts';
import { AppError } from '../../runtime/errors.ts';
import type { ImapSyncConfig } from './protocol.ts';

export type Credentials = { pass: string } | { accessToken: string };

export function clientOptions(config: ImapSyncConfig, credentials: Credentials): ImapFlowOptions {
  const { imap } = config;
  return {
    host: imap.host,
    port: imap.port,
    secure: imap.security === 'Tls',
    doSTARTTLS: imap.security === 'StartTls',
    auth: { user: imap.username, ...credentials },
    logger: false,
    qresync: true,
    autoIdleDelay: Math.min(2_000, Math.floor(config.commandTimeoutMs / 4)),
    connectionTimeout: config.connectTimeoutMs,
    greetingTimeout: config.connectTimeoutMs,
    // A silent server (a stall mid-answer) is noticed after CommandTimeout; IDLE is renewed well before that.
    socketTimeout: config.commandTimeoutMs,
    maxIdleTime: Math.max(1_000, Math.floor(config.commandTimeoutMs / 2)),
    clientInfo: { name: 'mailcairn' },
    ...(imap.trustedCertificateRef
      ? { tls: { ca: readSecret(imap.trustedCertificateRef, process.env, `Accounts:${config.account}:Imap:TrustedCertificate`) } }
      : {}),
  };
}

export async function openSession(config: ImapSyncConfig, credentials: Credentials): Promise<ImapFlow> {
  const client = new ImapFlow(clientOptions(config, credentials));
  // Without a listener an 'error' event would be thrown as uncaught; failures surface through the pending command.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    const ended = !client.usable;
    client.close();
    // imapflow marks every failed login as refused, also one it never sent because the server said BYE first
    // ("too many connections"): without the server's NO or BAD to it, that is the server gone, not a refusal.
    if (ended && isLoginUnanswered(err)) throw new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'ended-before-login' } });
    throw classifyImapFailure(err);
  }
  return client;
}

function isLoginUnanswered(err: unknown): boolean {
  const e = (err ?? {}) as { authenticationFailed?: unknown; responseStatus?: unknown; serverResponseCode?: unknown };
  return e.authenticationFailed === true && e.responseStatus === undefined && e.serverResponseCode === undefined;
}

/** Node's socket, stream and DNS failures, which imapflow passes through with their own code. */
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_STREAM_WRITE_AFTER_END',
]);

const tlsCodes = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
]);

/**
 * Every code imapflow sets (its `ImapFlowErrorCode`; `ParserError<n>` are
 * parser failures): `unresponsive` — the connection is gone, timed out or is
 * throttled; `protocol` — the server answered something we cannot use;
 * `defect` — a command we built wrong or an API misused, which is our bug and
 * is not classified. A test checks that this table covers imapflow's.
 */
export const imapflowCodes = {
  NoConnection: 'unresponsive',
  EConnectionClosed: 'unresponsive',
  StateLogout: 'unresponsive',
  ClosedAfterConnectText: 'unresponsive',
  ClosedAfterConnectTLS: 'unresponsive',
  CONNECT_TIMEOUT: 'unresponsive',
  GREETING_TIMEOUT: 'unresponsive',
  UPGRADE_TIMEOUT: 'unresponsive',
  ETIMEOUT: 'unresponsive',
  LockTimeout: 'unresponsive',
  ETHROTTLE: 'unresponsive',
  ProxyError: 'unresponsive',
  EPROXY: 'unresponsive',
  UnexpectedTag: 'protocol',
  MissingTag: 'protocol',
  InvalidResponse: 'protocol',
  ResponseProcessingFailed: 'protocol',
  STARTTLS_INJECTION: 'protocol',
  COMPRESS_TRAILING_DATA: 'protocol',
  PollFailed: 'protocol',
  NotFound: 'protocol',
  MissingServerExtension: 'protocol',
  ParserError: 'protocol',
  ParserErrorExchange: 'protocol',
  ParserErrorInternal: 'protocol',
  MAX_IMAP_NESTING_REACHED: 'protocol',
  LineTooLarge: 'protocol',
  LiteralTooLarge: 'protocol',
  ResponseTooLarge: 'protocol',
  TooManyTokens: 'protocol',
  TooManyResponses: 'protocol',
  DownloadOverflow: 'protocol',
  DownloadIncomplete: 'protocol',
  InvalidStringValue: 'defect',
  InvalidTokenValue: 'defect',
  InvalidTextValue: 'defect',
  InvalidSequenceSet: 'defect',
  InvalidSearchQuery: 'defect',
  InvalidMessageContent: 'defect',
  UnsupportedProxyAddress: 'defect',
  ERR_INVALID_URL: 'defect',
  UnsupportedTransportOption: 'defect',
  InstanceReused: 'defect',
  NoMailboxSelected: 'defect',
} as const satisfies Record<string, 'unresponsive' | 'protocol' | 'defect'>;

function imapflowKind(code: string): 'unresponsive' | 'protocol' | 'defect' | null {
  if (Object.hasOwn(imapflowCodes, code)) return imapflowCodes[code as keyof typeof imapflowCodes];
  return /^ParserError\d+$/.test(code) ? 'protocol' : null;
}

/**
 * Map what imapflow or the socket threw to one of our codes. An allow-list:
 * an AppError passes as it is; an error is classified only when imapflow or
 * Node marked it as coming from the server or the wire (a code from the
 * tables above, a refused login, a NO or BYE answer). Anything else — a
 * TypeError, a database error, a command we built wrong — is a defect, not
 * an IMAP outcome, and is thrown again as it is (a BAD as
 * `ImapCommandRejected`) so the actor crashes and the supervisor restarts
 * it. Never decided from the message text.
 */
export function classifyImapFailure(err: unknown, session?: { readonly usable: boolean }): AppError {
  if (err instanceof AppError) return err;
  // A command refused for the session's state after the server ended the session (a BYE): the consequence of that end.
  if (session !== undefined && !session.usable && (err as { code?: unknown })?.code === 'NoMailboxSelected') {
    return new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'session-ended' } });
  }
  const e = (err ?? {}) as { code?: unknown; authenticationFailed?: unknown; tlsFailed?: unknown; serverResponseCode?: unknown; responseStatus?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (e.authenticationFailed === true || code === 'AUTHENTICATIONFAILED' || e.serverResponseCode === 'AUTHENTICATIONFAILED') {
    return new AppError('E_IMAP_AUTH', { details: { cause: 'login-refused' } });
  }
  // tlsFailed: imapflow's mark for a required STARTTLS the server did not offer or that was tampered with.
  if (e.tlsFailed === true || tlsCodes.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /^[A-Z_]*CERT[A-Z_]*$/.test(code)) {
    return new AppError('E_IMAP_TLS', { details: { cause: code } });
  }
  const kind = socketCodes.has(code) ? 'unresponsive' : imapflowKind(code);
  if (kind === 'unresponsive') return new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: code } });
  if (kind === 'protocol') return new AppError('E_IMAP_PROTOCOL', { details: { cause: code } });
  // A server NO to a command we sent (imapflow sets no code on these): the server is there, the answer is not usable.
  if (kind === null && e.responseStatus === 'NO') return new AppError('E_IMAP_PROTOCOL', { details: { cause: 'NO' } });
  if (kind === null && e.responseStatus === 'BYE') return new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'BYE' } });
  // BAD: the server could not parse the command we built. Retrying sends the same bytes again.
  if (kind === null && e.responseStatus === 'BAD') throw new ImapCommandRejected(err);
  throw err;
}

/**
 * A command the server answered BAD (RFC 9051 §7.1.5: a protocol-level error
 * in the client's command): our defect. Thrown so the actor crashes and its
 * supervisor restarts it; the crash line shows this class and the status
 * codes, and the original error as the cause (reduced to class and frames
 * by the logger: its text quotes the command and the server's words).
 */
export class ImapCommandRejected extends Error {
  readonly serverResponseCode: string | null;
  constructor(cause: unknown) {
    super('The mail server answered BAD to a command Mailcairn built', { cause });
    this.name = 'ImapCommandRejected';
    this.serverResponseCode = imapFailureFields(cause).serverResponseCode ?? null;
  }
}

/** Whether what a command threw is the server's BAD to it. */
export function answeredBad(err: unknown): boolean {
  return ((err ?? {}) as { responseStatus?: unknown }).responseStatus === 'BAD';
}

/**
 * What of an IMAP failure may be logged: codes and statuses only. imapflow's
 * errors carry the command sent and the server's text, which can name
 * folders and quote content.
 */
export function imapFailureFields(err: unknown): Record<string, string | null> {
  const e = (err ?? {}) as { code?: unknown; responseStatus?: unknown; serverResponseCode?: unknown; name?: unknown };
  const text = (v: unknown): string | null => (typeof v === 'string' && /^[A-Za-z0-9_.-]{1,40}$/.test(v) ? v : null);
  return { type: text(e.name), code: text(e.code), responseStatus: text(e.responseStatus), serverResponseCode: text(e.serverResponseCode) };
}
