/**
 * Opening an IMAP session for an account, and the one place where IMAP and
 * socket failures are mapped to our codes: a refused login is E_IMAP_AUTH
 * (stop and wait for an operator; retrying a wrong password locks accounts),
 * anything on the wire — refused connection, timeout, reset, a cut mid-answer
 * — is E_IMAP_UNRESPONSIVE (defer, back off, retry), and a server answer we
 * cannot use is E_IMAP_PROTOCOL.
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
    client.close();
    throw classifyImapFailure(err);
  }
  return client;
}

const wireCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'NoConnection', 'ClosedAfterConnectTLS', 'ClosedAfterConnectText', 'CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'SOCKET_TIMEOUT', 'UPGRADE_TIMEOUT', 'ProtocolError']);

const tlsCodes = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED']);

/** Map anything imapflow or the socket threw to one of our codes. */
export function classifyImapFailure(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = (err ?? {}) as { code?: unknown; authenticationFailed?: unknown; serverResponseCode?: unknown; responseStatus?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (e.authenticationFailed === true || code === 'AUTHENTICATIONFAILED' || e.serverResponseCode === 'AUTHENTICATIONFAILED') {
    return new AppError('E_IMAP_AUTH', { details: { cause: 'login-refused' } });
  }
  if (tlsCodes.has(code) || code.startsWith('ERR_TLS_') || /CERT/.test(code)) return new AppError('E_IMAP_TLS', { details: { cause: code } });
  if (wireCodes.has(code) || /timeout|closed|connection|socket|ECONN/i.test(typeof e.message === 'string' ? e.message : '')) {
    return new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: code || 'connection' } });
  }
  // A server NO/BAD to a command we sent: the server is there, the answer is not usable.
  if (e.responseStatus === 'NO' || e.responseStatus === 'BAD') return new AppError('E_IMAP_PROTOCOL', { details: { cause: String(e.responseStatus) } });
  return new AppError('E_IMAP_PROTOCOL', { details: { cause: code || 'unknown' } });
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
