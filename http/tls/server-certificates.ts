/**
 * The server certificates of every HTTPS profile a listener will serve,
 * read from their secret references and checked at startup, before any
 * listener opens (agent-surface rule 13; docs/security.md). Every profile
 * is read and every problem of every profile is reported together; if any
 * is refused, none is served.
 *
 * Material: `CertificateChain` is PEM certificates in any order (other PEM
 * blocks and text around them are ignored), `PrivateKey` one unencrypted PEM
 * key (the reference is what protects it); `Bundle` is a PKCS#12 file, as
 * DER bytes or as base64 text (the only form an `env:` reference can hold),
 * with its password read from `Password` when written.
 *
 * Rules, each refusal naming the setting and the rule:
 * - the chain states one leaf: the one certificate that is not a
 *   certificate authority. A second non-authority is "a second leaf"; so
 *   "one leaf" and "every other certificate is an authority" are one check;
 * - the private key belongs to the leaf (their public keys are compared);
 * - the leaf is valid now; a DNS subject alternative name covers `Domain`
 *   exactly or by a wildcard standing for one whole left-most label (the
 *   subject's common name is never consulted, as TLS clients do);
 * - extended key usage names server authentication. An absent extension is
 *   refused (RFC 5280 would read it as "any purpose"): rule 11 refuses its
 *   absence on client certificates, CA/Browser Forum baseline requirements
 *   demand it on server certificates, and a certificate made for TLS says
 *   so. `anyExtendedKeyUsage` alone is refused too, as OpenSSL's own server
 *   purpose check does;
 * - key usage, where present, names digitalSignature;
 * - every other certificate is an authority, valid now, and issues (name
 *   and signature) the leaf or another supplied certificate.
 * The served chain is rebuilt from issuers: the leaf, its issuer, that one's
 * issuer, and so on; authorities off that path (a cross-signed twin) follow
 * in the order given.
 *
 * Keys stay in memory; no problem and no log line carries material, a
 * subject, a name from a certificate, the domain, or what a reference points at.
 */
import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Problem, problem } from '../../config/problem.ts';
import type { Config } from '../../config/schema.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import { readSecret, secretFileUnreadable, secretMaterial, secretTarget } from '../../runtime/secret-ref.ts';
import { digitalSignatureUsage } from './key-usage.ts';
import { openPkcs12 } from './pkcs12.ts';

export type TlsSurface = 'McpEndpoint' | 'AdminEndpoint' | 'HealthEndpoints';

export type ServerCertificate = {
  /** The profile's setting, e.g. `McpEndpoint:Https:Endpoints:0`. */
  readonly section: string;
  readonly surface: TlsSurface;
  readonly index: number;
  /** The profile's `Name`. */
  readonly name: string;
  readonly domain: string;
  /** PEM (PKCS#8) private key, in memory only, for `tls.createSecureContext`. */
  readonly key: string;
  /** PEM: the leaf, then its issuers in the order rebuilt from issuers. */
  readonly chain: string;
  readonly notAfter: Date;
  readonly minVersion: 'TLSv1.2' | 'TLSv1.3';
};

type Profile = Config['McpEndpoint']['Https']['Endpoints'][number];
type Located = { readonly surface: TlsSurface; readonly index: number; readonly section: string; readonly profile: Profile };

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const DAY_MS = 86_400_000;
const EXPIRY_WARNING_DAYS = 30;

const RULE = {
  parses: 'rule: the reference resolves and parses',
  keyBelongs: 'rule: the leaf has a private key belonging to it',
  validNow: 'rule: the certificate is valid now',
  covers: 'rule: a subject alternative name covers Domain exactly or by one wildcard label',
  serverAuth: 'rule: extended key usage permits server authentication',
  digitalSignature: 'rule: key usage, where present, permits digitalSignature',
  oneLeaf: 'rule: the chain states one leaf, every other certificate is a certificate authority',
  authorities: 'rule: every other certificate is a certificate authority, valid now, and issues the leaf or another supplied certificate',
} as const;

/** Profiles of enabled endpoints whose transport terminates TLS with them. */
function servedProfiles(config: Config): Located[] {
  const served: Located[] = [];
  const add = (surface: TlsSurface, profiles: readonly Profile[]): void => {
    profiles.forEach((profile, index) => {
      served.push({ surface, index, section: `${surface}:Https:Endpoints:${index}`, profile });
    });
  };
  if (config.McpEndpoint.Enabled && config.McpEndpoint.Transport !== 'Http') add('McpEndpoint', config.McpEndpoint.Https.Endpoints);
  // The administrative endpoint has no Transport: written profiles are its TLS listeners.
  if (config.AdminEndpoint.Enabled) add('AdminEndpoint', config.AdminEndpoint.Https.Endpoints);
  if (config.HealthEndpoints.Enabled && config.HealthEndpoints.Transport === 'HttpsOnly') add('HealthEndpoints', config.HealthEndpoints.Https.Endpoints);
  return served;
}

/** What a profile's references hold, parsed; `certificates` in the order given. */
type Material = {
  readonly certificates: readonly X509Certificate[];
  readonly key: KeyObject;
  /** Settings a problem about the certificates, or about the key, names. */
  readonly chainSetting: string;
  readonly keySetting: string;
};

type Outcome<T> = { readonly value: T; readonly problems: readonly [] } | { readonly value: null; readonly problems: Problem[] };
const ok = <T>(value: T): Outcome<T> => ({ value, problems: [] });
const refused = (...problems: Problem[]): Outcome<never> => ({ value: null, problems });

function unreadable(setting: string, err: unknown): Problem {
  const why = err instanceof AppError && err.code === 'E_CONFIG_SECRET_UNREADABLE' ? `: ${err.message}` : '';
  return problem(setting, `could not be read at startup${why} (${RULE.parses})`);
}

function readText(ref: string, env: NodeJS.ProcessEnv, setting: string): Outcome<string> {
  try {
    return ok(readSecret(ref, env));
  } catch (err) {
    return refused(unreadable(setting, err));
  }
}

/** A bundle's bytes (problems name `setting`, the Bundle block): read as bytes (one trailing newline is material in DER), or base64 text from a variable or a text file. */
function readBundleBytes(ref: string, env: NodeJS.ProcessEnv, setting: string): Outcome<Buffer> {
  let bytes: Buffer;
  try {
    const target = secretTarget(ref, env);
    if (target.scheme === 'env') bytes = Buffer.from(secretMaterial('env', target.text), 'utf8');
    else {
      try {
        bytes = readFileSync(target.path);
      } catch (err) {
        throw secretFileUnreadable(target.scheme, err);
      }
      if (bytes.length === 0) secretMaterial(target.scheme, '');
    }
  } catch (err) {
    return refused(unreadable(`${setting}:SecretReference`, err));
  }
  // A DER PKCS#12 starts with a SEQUENCE; anything else must be base64 of one.
  if (bytes[0] === 0x30) return ok(bytes);
  const text = bytes.toString('latin1').replace(/\s+/g, '');
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return ok(Buffer.from(text, 'base64'));
  return refused(problem(setting, `is neither a PKCS#12 bundle nor base64 of one (${RULE.parses})`));
}

function parseCertificates(pem: string, setting: string): Outcome<X509Certificate[]> {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return refused(problem(setting, `holds no PEM certificate (${RULE.parses})`));
  const certificates: X509Certificate[] = [];
  const problems: Problem[] = [];
  blocks.forEach((block, at) => {
    try {
      certificates.push(new X509Certificate(block));
    } catch {
      problems.push(problem(setting, `certificate ${at + 1} as given cannot be parsed (${RULE.parses})`));
    }
  });
  return problems.length > 0 ? refused(...problems) : ok(certificates);
}

function readPem(at: string, chainBlock: { SecretReference: string }, keyBlock: { SecretReference: string }, env: NodeJS.ProcessEnv): Outcome<Material> {
  const chainSetting = `${at}:ServerCertificate:CertificateChain`;
  const keySetting = `${at}:ServerCertificate:PrivateKey`;
  const problems: Problem[] = [];
  const chainText = readText(chainBlock.SecretReference, env, `${chainSetting}:SecretReference`);
  const certificates = chainText.value === null ? chainText : parseCertificates(chainText.value, chainSetting);
  problems.push(...certificates.problems);
  const keyText = readText(keyBlock.SecretReference, env, `${keySetting}:SecretReference`);
  problems.push(...keyText.problems);
  let key: KeyObject | null = null;
  if (keyText.value !== null) {
    try {
      key = createPrivateKey({ key: keyText.value, format: 'pem' });
    } catch {
      problems.push(problem(keySetting, `is not a readable unencrypted PEM private key; the reference, not a passphrase, protects it (${RULE.parses})`));
    }
  }
  if (certificates.value === null || key === null) return refused(...problems);
  return ok({ certificates: certificates.value, key, chainSetting, keySetting });
}

function readBundle(at: string, bundle: NonNullable<Profile['ServerCertificate']['Bundle']>, env: NodeJS.ProcessEnv): Outcome<Material> {
  const setting = `${at}:ServerCertificate:Bundle`;
  const bytes = readBundleBytes(bundle.SecretReference, env, setting);
  const password = bundle.Password === undefined ? ok('') : readText(bundle.Password.SecretReference, env, `${setting}:Password:SecretReference`);
  if (bytes.value === null || password.value === null) return refused(...bytes.problems, ...password.problems);
  const opened = openPkcs12(bytes.value, password.value);
  if (!opened.ok) {
    const why = {
      password:
        bundle.Password === undefined
          ? 'the bundle could not be opened without a password; write Bundle:Password'
          : 'the bundle could not be opened with its password',
      unreadable: 'is not a PKCS#12 bundle that can be read',
      unsupported:
        'uses an encryption or integrity scheme this build does not open (RC2, RC4, PBMAC1 or public-key integrity); export it again with AES (OpenSSL 3 defaults)',
    }[opened.reason];
    return refused(problem(setting, `${why} (${RULE.parses})`));
  }
  const problems: Problem[] = [];
  if (opened.keys.length !== 1)
    problems.push(problem(setting, `holds ${opened.keys.length} private keys; exactly one, the leaf's, is needed (${RULE.keyBelongs})`));
  const certificates: X509Certificate[] = [];
  opened.certificates.forEach((der, index) => {
    try {
      certificates.push(new X509Certificate(der));
    } catch {
      problems.push(problem(setting, `certificate ${index + 1} as given cannot be parsed (${RULE.parses})`));
    }
  });
  if (certificates.length === 0 && opened.certificates.length === 0) problems.push(problem(setting, `holds no certificate (${RULE.parses})`));
  if (problems.length > 0) return refused(...problems);
  return ok({ certificates, key: opened.keys[0]!, chainSetting: setting, keySetting: setting });
}

/** `YYYY-MM-DD` of a certificate date: dates are not secret, and name which way the validity fails. */
const day = (date: Date): string => date.toISOString().slice(0, 10);
const notBeforeOf = (certificate: X509Certificate): Date => new Date(certificate.validFrom);
const notAfterOf = (certificate: X509Certificate): Date => new Date(certificate.validTo);

/** Why `certificate` is not valid at `now`, or null when it is. */
function invalidNow(certificate: X509Certificate, now: number): string | null {
  const from = notBeforeOf(certificate);
  const to = notAfterOf(certificate);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) return 'its validity dates cannot be read';
  if (now < from.getTime()) return `it is not valid before ${day(from)}`;
  if (now > to.getTime()) return `it expired on ${day(to)}`;
  return null;
}

/** Whether `issuer` issued `subject`: names (and key identifiers) match and the signature verifies. */
function issued(issuer: X509Certificate, subject: X509Certificate): boolean {
  try {
    return subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

const spki = (key: KeyObject): Buffer => key.export({ type: 'spki', format: 'der' });

function leafProblems(leaf: X509Certificate, material: Material, domain: string, now: number): Problem[] {
  const problems: Problem[] = [];
  const at = material.chainSetting;
  if (!spki(createPublicKey(material.key)).equals(spki(leaf.publicKey))) {
    problems.push(problem(material.keySetting, `the private key does not belong to the leaf certificate: their public keys differ (${RULE.keyBelongs})`));
  }
  const invalid = invalidNow(leaf, now);
  if (invalid !== null) problems.push(problem(at, `the leaf certificate is not valid now: ${invalid} (${RULE.validNow})`));
  // OpenSSL's host check, as a TLS client runs it: DNS names only, a wildcard only as a whole left-most label.
  const covered = leaf.checkHost(domain, {
    subject: 'never',
    wildcards: true,
    partialWildcards: false,
    multiLabelWildcards: false,
    singleLabelSubdomains: false,
  });
  if (covered === undefined) problems.push(problem(at, `no subject alternative name of the leaf certificate covers Domain (${RULE.covers})`));
  // Node 20 names the extended key usage `keyUsage`; later releases add `extKeyUsage` and deprecate the old name.
  const extended = ((leaf as { extKeyUsage?: string[] }).extKeyUsage ?? leaf.keyUsage) as string[] | undefined;
  if (extended === undefined || extended.length === 0) {
    problems.push(problem(at, `the leaf certificate has no extended key usage; it must name server authentication (${RULE.serverAuth})`));
  } else if (!extended.includes(SERVER_AUTH)) {
    problems.push(problem(at, `the leaf certificate's extended key usage does not name server authentication (${RULE.serverAuth})`));
  }
  let usage: boolean | 'absent';
  try {
    usage = digitalSignatureUsage(leaf);
  } catch {
    usage = false;
  }
  if (usage === false) problems.push(problem(at, `the leaf certificate's key usage does not permit digitalSignature (${RULE.digitalSignature})`));
  return problems;
}

function authorityProblems(certificates: readonly X509Certificate[], material: Material, now: number): Problem[] {
  const problems: Problem[] = [];
  certificates.forEach((certificate, position) => {
    if (!certificate.ca) return;
    const named = `certificate ${position + 1} as given (an authority)`;
    const invalid = invalidNow(certificate, now);
    if (invalid !== null) problems.push(problem(material.chainSetting, `${named} is not valid now: ${invalid} (${RULE.authorities})`));
    if (!certificates.some((other, index) => index !== position && issued(certificate, other))) {
      problems.push(problem(material.chainSetting, `${named} issues neither the leaf nor another supplied certificate (${RULE.authorities})`));
    }
  });
  return problems;
}

/** The leaf, then its issuer, then that one's issuer among the supplied certificates; then the authorities off that path, as given. */
function rebuildChain(leaf: X509Certificate, certificates: readonly X509Certificate[]): X509Certificate[] {
  const path = [leaf];
  const used = new Set([leaf]);
  for (let current = leaf; ; ) {
    const issuer = certificates.find((candidate) => !used.has(candidate) && issued(candidate, current));
    if (issuer === undefined) break;
    path.push(issuer);
    used.add(issuer);
    current = issuer;
  }
  return [...path, ...certificates.filter((certificate) => !used.has(certificate))];
}

function checkProfile(located: Located, material: Material, now: number): Outcome<ServerCertificate> {
  const { certificates } = material;
  const leaves = certificates.flatMap((certificate, position) => (certificate.ca ? [] : [position + 1]));
  const problems: Problem[] = [];
  if (leaves.length === 0) problems.push(problem(material.chainSetting, `states no leaf: every certificate is a certificate authority (${RULE.oneLeaf})`));
  if (leaves.length > 1) {
    problems.push(
      problem(
        material.chainSetting,
        `states ${leaves.length} leaves: certificates ${leaves.join(', ')} as given are not certificate authorities (${RULE.oneLeaf})`,
      ),
    );
  }
  const leaf = leaves.length === 1 ? certificates[leaves[0]! - 1]! : null;
  if (leaf !== null) problems.push(...leafProblems(leaf, material, located.profile.Domain, now));
  problems.push(...authorityProblems(certificates, material, now));
  if (leaf === null || problems.length > 0) return refused(...problems);
  return ok({
    section: located.section,
    surface: located.surface,
    index: located.index,
    name: located.profile.Name,
    domain: located.profile.Domain,
    key: material.key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    chain: rebuildChain(leaf, certificates)
      .map((certificate) => certificate.toString())
      .join(''),
    notAfter: notAfterOf(leaf),
    minVersion: located.profile.MinimumTlsVersion === 'Tls13' ? 'TLSv1.3' : 'TLSv1.2',
  });
}

function readProfile(located: Located, env: NodeJS.ProcessEnv, now: number): Outcome<ServerCertificate> {
  const certificate = located.profile.ServerCertificate;
  let material: Outcome<Material>;
  if (certificate.Bundle !== undefined) material = readBundle(located.section, certificate.Bundle, env);
  else if (certificate.CertificateChain !== undefined && certificate.PrivateKey !== undefined) {
    material = readPem(located.section, certificate.CertificateChain, certificate.PrivateKey, env);
  } else return refused(); // A shape `config/checks/https-profiles.ts` already refused.
  return material.value === null ? material : checkProfile(located, material.value, now);
}

/** Every enabled endpoint's profiles read and checked now; problems of all profiles together (none served if any fails). */
export function readServerCertificates(config: Config, env: NodeJS.ProcessEnv, now: number): { certificates: ServerCertificate[]; problems: Problem[] } {
  const certificates: ServerCertificate[] = [];
  const problems: Problem[] = [];
  for (const located of servedProfiles(config)) {
    const outcome = readProfile(located, env, now);
    if (outcome.value !== null) certificates.push(outcome.value);
    problems.push(...outcome.problems);
  }
  return problems.length > 0 ? { certificates: [], problems } : { certificates, problems };
}

/** Startup's and check-config's view: the problems only. */
export function serverCertificateProblems(config: Config, env: NodeJS.ProcessEnv, now: number): Problem[] {
  return readServerCertificates(config, env, now).problems;
}

/** One info line per certificate with its expiry (`tls.certificate`), a warning instead within thirty days. Never the subject or any material. */
export function logCertificateExpiry(log: Logger, certificates: readonly ServerCertificate[], now: number): void {
  for (const certificate of certificates) {
    const left = certificate.notAfter.getTime() - now;
    const fields = {
      event: 'tls.certificate',
      section: certificate.section,
      profile: certificate.name,
      notAfter: certificate.notAfter.toISOString(),
      daysLeft: Math.floor(left / DAY_MS),
    };
    if (left <= EXPIRY_WARNING_DAYS * DAY_MS) log.warn(fields, 'tls.certificate');
    else log.info(fields, 'tls.certificate');
  }
}
