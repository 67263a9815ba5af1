/**
 * Certificates of https endpoints (docs/cli.md "Clear text and certificates";
 * conditions "certificate this machine does not trust / this profile has not
 * pinned"). Login probes the certificate first: one this machine trusts needs
 * nothing more; one it does not trust is accepted only by
 * `--trust-untrusted-certificate` (or a yes on a terminal), and then its
 * SHA-256 fingerprint is pinned in the profile. A pinned profile talks only to
 * that exact certificate: the fingerprint is the trust, so the chain and the
 * name are not checked again, and any other certificate, even a trusted one,
 * is refused until the operator logs in again (the pinned connection:
 * http-exchange.ts).
 */
import { connect, type TLSSocket } from 'node:tls';
import { isIP } from 'node:net';

export type Probe = { readonly trusted: boolean; readonly sha256: string; readonly reason: string | null };

/** Node's codes for a chain or a name this machine does not accept. */
export const UNTRUSTED_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

export class PinMismatch extends Error {
  readonly presented: string;
  constructor(presented: string) {
    super('certificate not pinned');
    this.name = 'PinMismatch';
    this.presented = presented;
  }
}

function serverName(hostname: string): string | undefined {
  const host = hostname.replace(/^\[|\]$/g, '');
  return isIP(host) === 0 ? host : undefined;
}

/** The certificate an https endpoint presents, and whether this machine trusts it for that name. */
export function probeCertificate(endpoint: string, timeoutMs: number): Promise<Probe> {
  const url = new URL(endpoint);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({
      host,
      port: Number(url.port || 443),
      servername: serverName(url.hostname),
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
    });
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error('timeout'), { name: 'TimeoutError' })), timeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const certificate = socket.getPeerCertificate();
      const reason = socket.authorized ? null : String(socket.authorizationError ?? 'untrusted');
      socket.end();
      resolve({ trusted: socket.authorized, sha256: certificate.fingerprint256, reason });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
