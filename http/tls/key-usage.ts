/**
 * The key usage extension (RFC 5280 4.2.1.3) of a certificate, read from its
 * DER: Node's `X509Certificate` exposes only the *extended* key usage (under
 * the misleading name `keyUsage`). Used by the startup checks of HTTPS
 * profiles (docs/security.md, agent-surface rule 13: key usage, where
 * present, permits digitalSignature).
 */
import type { X509Certificate } from 'node:crypto';
import { childrenOf, childrenWith, expect, oidOf, readWhole, TAG } from './der.ts';

const KEY_USAGE_OID = '2.5.29.15';

/**
 * Whether the certificate's key usage names digitalSignature (bit 0), or
 * `absent` when the certificate carries no key usage extension.
 * @throws DerError when the certificate's DER cannot be walked.
 */
export function digitalSignatureUsage(certificate: X509Certificate): boolean | 'absent' {
  // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }
  const [tbs] = childrenWith(readWhole(certificate.raw), TAG.sequence);
  // TBSCertificate ends with `[3] EXPLICIT Extensions` (v3 only); nothing else in it carries tag [3].
  const wrapper = childrenWith(tbs, TAG.sequence).find((field) => field.tag === TAG.context(3));
  if (wrapper === undefined) return 'absent';
  const [extensions] = childrenOf(wrapper);
  for (const extension of childrenWith(extensions, TAG.sequence)) {
    // Extension ::= SEQUENCE { extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
    const fields = childrenWith(extension, TAG.sequence);
    if (oidOf(fields[0]) !== KEY_USAGE_OID) continue;
    const value = expect(fields[fields.length - 1], TAG.octetString).content;
    // KeyUsage ::= BIT STRING: one octet of unused-bit count, then the bits, bit 0 (digitalSignature) first.
    const bits = expect(readWhole(value), TAG.bitString).content;
    return bits.length > 1 && (bits[1]! & 0x80) !== 0;
  }
  return 'absent';
}
