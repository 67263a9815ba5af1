/**
 * Opening a PKCS#12 bundle (RFC 7292) in memory: its certificates and its
 * private keys. Node has no PKCS#12 reader (`tls.createSecureContext({ pfx })`
 * loads one but gives nothing back to check), so the structure is walked
 * here with `der.ts` and every primitive is `node:crypto`'s:
 * - integrity: the HMAC of `MacData` (PKCS#12 key derivation, SHA-1 or
 *   SHA-2), checked first, so a wrong password is told apart from damage;
 * - encryption of certificate and key bags: PBES2 (PBKDF2 with AES-CBC or
 *   3DES, what OpenSSL 3 writes) and pbeWithSHAAnd3-KeyTripleDES-CBC (what
 *   older tools and Windows write). RC2 and RC4, and PBMAC1 integrity, are
 *   refused as `unsupported`: re-exporting with current OpenSSL defaults
 *   opens.
 * Nothing here keeps or reports the password or any material.
 */
import { createDecipheriv, createHmac, createHash, createPrivateKey, type KeyObject, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { childrenOf, childrenWith, type DerNode, DerError, expect, octets, oidOf, readWhole, smallInteger, TAG } from './der.ts';

export type Pkcs12Contents = { readonly certificates: Buffer[]; readonly keys: KeyObject[] };
export type Pkcs12Refusal = 'password' | 'unreadable' | 'unsupported';
export type Pkcs12Result = ({ readonly ok: true } & Pkcs12Contents) | { readonly ok: false; readonly reason: Pkcs12Refusal };

class Unsupported extends Error {}
class WrongPassword extends Error {}

const OID = {
  data: '1.2.840.113549.1.7.1',
  encryptedData: '1.2.840.113549.1.7.6',
  keyBag: '1.2.840.113549.1.12.10.1.1',
  shroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
  pbeSha1TripleDes: '1.2.840.113549.1.12.1.3',
} as const;

/** Digest OIDs (MacData, PKCS#12 KDF) and PBKDF2 PRF OIDs, by node:crypto name and block size in bytes. */
const DIGESTS: Record<string, { name: string; block: number }> = {
  '1.3.14.3.2.26': { name: 'sha1', block: 64 },
  '2.16.840.1.101.3.4.2.4': { name: 'sha224', block: 64 },
  '2.16.840.1.101.3.4.2.1': { name: 'sha256', block: 64 },
  '2.16.840.1.101.3.4.2.2': { name: 'sha384', block: 128 },
  '2.16.840.1.101.3.4.2.3': { name: 'sha512', block: 128 },
};
const PRFS: Record<string, string> = {
  '1.2.840.113549.2.7': 'sha1',
  '1.2.840.113549.2.8': 'sha224',
  '1.2.840.113549.2.9': 'sha256',
  '1.2.840.113549.2.10': 'sha384',
  '1.2.840.113549.2.11': 'sha512',
};
const CIPHERS: Record<string, { name: string; keyLength: number }> = {
  '2.16.840.1.101.3.4.1.2': { name: 'aes-128-cbc', keyLength: 16 },
  '2.16.840.1.101.3.4.1.22': { name: 'aes-192-cbc', keyLength: 24 },
  '2.16.840.1.101.3.4.1.42': { name: 'aes-256-cbc', keyLength: 32 },
  '1.2.840.113549.3.7': { name: 'des-ede3-cbc', keyLength: 24 },
};

/** The password as PKCS#12 key derivation takes it: BMPString (UTF-16BE) with a two-byte terminator (RFC 7292 B.1). */
function bmpPassword(password: string): Buffer {
  const utf16 = Buffer.from(`${password}\0`, 'utf16le');
  return utf16.swap16();
}

/** RFC 7292 appendix B.2: `length` bytes of key material for purpose `id` (1 key, 2 IV, 3 MAC key). */
function pkcs12Kdf(digest: { name: string; block: number }, password: Buffer, salt: Buffer, id: number, iterations: number, length: number): Buffer {
  const v = digest.block;
  const fill = (source: Buffer): Buffer => {
    if (source.length === 0) return Buffer.alloc(0);
    const out = Buffer.alloc(v * Math.ceil(source.length / v));
    for (let i = 0; i < out.length; i++) out[i] = source[i % source.length]!;
    return out;
  };
  const input = Buffer.concat([fill(salt), fill(password)]);
  const diversifier = Buffer.alloc(v, id);
  const blocks: Buffer[] = [];
  for (let produced = 0; produced < length; ) {
    let a = createHash(digest.name).update(diversifier).update(input).digest();
    for (let round = 1; round < iterations; round++) a = createHash(digest.name).update(a).digest();
    blocks.push(a);
    produced += a.length;
    // I_j = (I_j + B + 1) mod 2^(8v), B being A repeated to v bytes.
    const b = fill(a).subarray(0, v);
    for (let j = 0; j < input.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const sum = input[j + k]! + b[k]! + carry;
        input[j + k] = sum & 0xff;
        carry = sum >> 8;
      }
    }
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** Checks the bundle's MacData over the authenticated safe; OpenSSL tries an empty password both with and without its terminator, so do we. */
function verifyMac(macData: DerNode, authSafe: Buffer, password: string): void {
  const [digestInfo, saltNode, iterationsNode] = childrenWith(macData, TAG.sequence);
  const [algorithm, expected] = childrenWith(digestInfo, TAG.sequence);
  const digest = DIGESTS[oidOf(childrenWith(algorithm, TAG.sequence)[0])];
  if (digest === undefined) throw new Unsupported();
  const salt = expect(saltNode, TAG.octetString).content;
  const iterations = iterationsNode === undefined ? 1 : smallInteger(iterationsNode);
  const wanted = expect(expected, TAG.octetString).content;
  const candidates = password === '' ? [bmpPassword(''), Buffer.alloc(0)] : [bmpPassword(password)];
  for (const candidate of candidates) {
    const key = pkcs12Kdf(digest, candidate, salt, 3, iterations, createHash(digest.name).digest().length);
    const mac = createHmac(digest.name, key).update(authSafe).digest();
    if (mac.length === wanted.length && timingSafeEqual(mac, wanted)) return;
  }
  throw new WrongPassword();
}

/** Decrypts `ciphertext` under the algorithm identifier `algorithm` (PBES2 or PKCS#12 3DES). */
function decrypt(algorithm: DerNode, ciphertext: Buffer, password: string): Buffer {
  const [oidNode, params] = childrenWith(algorithm, TAG.sequence);
  const oid = oidOf(oidNode);
  let cipher: string;
  let key: Buffer;
  let iv: Buffer;
  if (oid === OID.pbes2) {
    const [kdf, scheme] = childrenWith(params, TAG.sequence);
    const [kdfOid, kdfParams] = childrenWith(kdf, TAG.sequence);
    if (oidOf(kdfOid) !== OID.pbkdf2) throw new Unsupported();
    const [schemeOid, ivNode] = childrenWith(scheme, TAG.sequence);
    const chosen = CIPHERS[oidOf(schemeOid)];
    if (chosen === undefined) throw new Unsupported();
    // PBKDF2-params ::= SEQUENCE { salt OCTET STRING, iterationCount INTEGER, keyLength INTEGER OPTIONAL, prf DEFAULT hmacWithSHA1 }
    const fields = childrenWith(kdfParams, TAG.sequence);
    const salt = expect(fields[0], TAG.octetString).content;
    const iterations = smallInteger(fields[1]);
    const prfNode = fields.slice(2).find((field) => field.tag === TAG.sequence);
    const prf = prfNode === undefined ? 'sha1' : PRFS[oidOf(childrenOf(prfNode)[0])];
    if (prf === undefined) throw new Unsupported();
    cipher = chosen.name;
    key = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, chosen.keyLength, prf);
    iv = expect(ivNode, TAG.octetString).content;
  } else if (oid === OID.pbeSha1TripleDes) {
    const [saltNode, iterationsNode] = childrenWith(params, TAG.sequence);
    const salt = expect(saltNode, TAG.octetString).content;
    const iterations = smallInteger(iterationsNode);
    const sha1 = DIGESTS['1.3.14.3.2.26']!;
    cipher = 'des-ede3-cbc';
    key = pkcs12Kdf(sha1, bmpPassword(password), salt, 1, iterations, 24);
    iv = pkcs12Kdf(sha1, bmpPassword(password), salt, 2, iterations, 8);
  } else {
    throw new Unsupported();
  }
  try {
    const decipher = createDecipheriv(cipher, key, iv);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    // Bad padding after a MAC that verified (or no MAC at all): the password does not open this part.
    throw new WrongPassword();
  }
}

/** The bags of one SafeContents. */
function readSafeContents(safeContents: Buffer, password: string, into: { certificates: Buffer[]; keys: KeyObject[] }): void {
  for (const bag of childrenWith(readWhole(safeContents), TAG.sequence)) {
    // SafeBag ::= SEQUENCE { bagId OID, bagValue [0] EXPLICIT, bagAttributes SET OPTIONAL }
    const [idNode, wrapper] = childrenWith(bag, TAG.sequence);
    const bagId = oidOf(idNode);
    const [value] = childrenWith(wrapper, TAG.context(0));
    if (value === undefined) throw new DerError('empty bag');
    if (bagId === OID.certBag) {
      const [certId, certWrapper] = childrenWith(value, TAG.sequence);
      if (oidOf(certId) !== OID.x509Certificate) continue;
      const [certificate] = childrenWith(certWrapper, TAG.context(0));
      into.certificates.push(Buffer.from(octets(certificate, TAG.octetString)));
    } else if (bagId === OID.keyBag) {
      into.keys.push(createPrivateKey({ key: Buffer.from(value.raw), format: 'der', type: 'pkcs8' }));
    } else if (bagId === OID.shroudedKeyBag) {
      // EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm, encryptedData OCTET STRING }
      const [algorithm, encrypted] = childrenWith(value, TAG.sequence);
      const plain = decrypt(expect(algorithm, TAG.sequence), expect(encrypted, TAG.octetString).content, password);
      into.keys.push(createPrivateKey({ key: plain, format: 'der', type: 'pkcs8' }));
    }
    // CRL, secret and nested SafeContents bags hold nothing a server certificate needs.
  }
}

/**
 * The certificates (DER, in bag order) and private keys of a bundle.
 * `password` is '' when the configuration gives none.
 */
export function openPkcs12(bundle: Buffer, password: string): Pkcs12Result {
  try {
    // PFX ::= SEQUENCE { version INTEGER (3), authSafe ContentInfo, macData MacData OPTIONAL }
    const [version, authSafeInfo, macData] = childrenWith(readWhole(bundle), TAG.sequence);
    if (smallInteger(version) !== 3) return { ok: false, reason: 'unreadable' };
    const [contentType, contentWrapper] = childrenWith(authSafeInfo, TAG.sequence);
    // Public-key integrity mode (signedData) is not supported: every tool writes password integrity.
    if (oidOf(contentType) !== OID.data) return { ok: false, reason: 'unsupported' };
    const authSafe = octets(childrenWith(contentWrapper, TAG.context(0))[0], TAG.octetString);
    if (macData !== undefined) verifyMac(macData, authSafe, password);
    const contents = { certificates: [] as Buffer[], keys: [] as KeyObject[] };
    // AuthenticatedSafe ::= SEQUENCE OF ContentInfo, each plain data or password-encrypted data.
    for (const info of childrenWith(readWhole(authSafe), TAG.sequence)) {
      const [typeNode, wrapper] = childrenWith(info, TAG.sequence);
      const [inner] = childrenWith(wrapper, TAG.context(0));
      if (inner === undefined) throw new DerError('empty content');
      const type = oidOf(typeNode);
      if (type === OID.data) {
        readSafeContents(octets(inner, TAG.octetString), password, contents);
      } else if (type === OID.encryptedData) {
        // EncryptedData ::= SEQUENCE { version, EncryptedContentInfo { contentType, algorithm, [0] IMPLICIT encryptedContent } }
        const [, encryptedInfo] = childrenWith(inner, TAG.sequence);
        const [, algorithm, content] = childrenWith(encryptedInfo, TAG.sequence);
        const ciphertext = octets(content, TAG.contextPrimitive(0));
        readSafeContents(decrypt(expect(algorithm, TAG.sequence), ciphertext, password), password, contents);
      } else {
        return { ok: false, reason: 'unsupported' };
      }
    }
    return { ok: true, ...contents };
  } catch (err) {
    if (err instanceof WrongPassword) return { ok: false, reason: 'password' };
    if (err instanceof Unsupported) return { ok: false, reason: 'unsupported' };
    return { ok: false, reason: 'unreadable' };
  }
}
