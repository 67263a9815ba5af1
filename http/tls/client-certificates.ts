/**
 * The client-certificate check of `/mcp` (mutual TLS; docs/security.md
 * "Client certificates", a section still to write: the rules and decisions
 * below are its content). The MCP listener terminates TLS with
 * `requestCert: true, rejectUnauthorized: false`, so the handshake accepts
 * any certificate or none; this module judges, on every request (after the
 * origin check, before authentication), what the connection presented. Per
 * request, never per handshake: a keep-alive connection or a resumed session
 * is judged again each time, so withdrawing a client or replacing anchor
 * material takes effect on the next request.
 *
 * A certificate passes a profile when, all of:
 * - its extended key usage names client authentication (absent: refused;
 *   `anyExtendedKeyUsage` names nothing in particular, so it does not pass);
 * - the current time is inside its validity period (bounds included);
 * - a DNS subject alternative name equals one of the profile's expected
 *   names (case-insensitive; a wildcard name in the certificate matches
 *   nothing; the subject common name is never read);
 * - it was issued directly by a certificate of one of the profile's trust
 *   anchors (issuer name and key identifier, then the signature). Only the
 *   leaf is validated: an intermediate authority counts only when listed as
 *   an anchor itself; an anchor's own validity is not checked; no revocation.
 * Profiles are tried in configuration order; the first acceptance ends the
 * walk and names the partition `<profile:Name>`.
 *
 * Outcomes:
 * - no profile configured: unidentified, whatever was presented;
 * - no certificate: refused when any profile is `Required`, else
 *   unidentified (`Requirement` speaks only of the absence of a certificate);
 * - a certificate no profile accepts: refused, under `Optional` profiles
 *   too: a client that presents a certificate expects to be identified by
 *   it, and serving it anonymously would hide the misconfiguration.
 * A refusal carries the certificate's SHA-256 thumbprint and one fixed
 * sentence (the most specific reason any profile gave), for the log only;
 * the answer is an empty 403 (E_HTTP_CERTIFICATE_REFUSED).
 *
 * Anchors: PEM files (one or several CERTIFICATE blocks, each a certificate
 * authority) read through `runtime/secret-cache.ts`: a request waits for the
 * cache's freshness check (a synchronous stat in the steady state, no read)
 * and parsed anchors are kept until the material changes. An anchor that
 * stops loading is logged at error (once per change of cause, by setting and
 * anchor name, never its path) and skipped; it is logged at info when it
 * loads again. A profile none of whose anchors load refuses every
 * certificate.
 *
 * Nothing from a certificate reaches a log line but its thumbprint.
 */
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { Config } from '../../config/schema.ts';
import type { Logger } from '../../runtime/log.ts';
import { createSecretCache, type SecretCache } from '../../runtime/secret-cache.ts';

export type ClientCertificateProfiles = Config['McpEndpoint']['ClientCertificateProfiles'];

export type CertificateVerdict =
  /** Accepted by the profile named: the rate-limit partition `<profile:Name>`. */
  | { kind: 'identified'; profile: string }
  /** No profile configured, or no certificate where every profile is Optional. */
  | { kind: 'unidentified' }
  /** Answered 403 with an empty body; `reason` is a fixed sentence for the log. */
  | { kind: 'refused'; thumbprint: string | null; reason: string };

export type CertificateRefusal = Extract<CertificateVerdict, { kind: 'refused' }>;

export type ClientCertificateCheck = (peer: { certificate: X509Certificate | null }) => Promise<CertificateVerdict>;

export type ClientCertificateCheckDeps = {
  log: Logger;
  /** For `env:` and `systemd:` references; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** Milliseconds since the epoch; Date.now by default. */
  now?: () => number;
  /** Where anchor material is read from; one cache of these references by default. */
  secrets?: SecretCache;
};

/** Why a certificate was refused: fixed sentences, the only thing a refusal log line says besides the thumbprint. */
export const REFUSAL_REASONS = {
  noCertificate: 'no client certificate was presented and a profile requires one',
  noClientAuthentication: 'the certificate has no extended key usage naming client authentication',
  notYetValid: 'the certificate is not valid yet',
  expired: 'the certificate has expired',
  noExpectedName: "the certificate carries none of any profile's expected DNS names",
  noAnchorLoads: 'the certificate names a profile none of whose trust anchors loads',
  notIssuedByAnchor: "the certificate names a profile but was not issued directly by one of that profile's trust anchors",
} as const;

const SECTION = 'McpEndpoint:ClientCertificateProfiles';
const CLIENT_AUTHENTICATION_OID = '1.3.6.1.5.5.7.3.2';
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
/** Signature checks remembered per authority; past this many, its memory starts over (a client presenting ever new certificates). */
const MAX_REMEMBERED_PER_AUTHORITY = 1024;

/** What one anchor's material gave: the authorities it holds, or why it does not load (a fixed sentence). */
type AnchorLoad = { kind: 'loaded'; authorities: readonly X509Certificate[] } | { kind: 'failed'; cause: string; err?: unknown };

type Anchor = { readonly ref: string; readonly name: string; readonly setting: string };
type Profile = { readonly name: string; readonly required: boolean; readonly anchors: readonly Anchor[]; readonly names: readonly string[] };

/** How far a certificate got against one profile; the furthest names the refusal. */
const PROFILE_REASONS = [REFUSAL_REASONS.noExpectedName, REFUSAL_REASONS.noAnchorLoads, REFUSAL_REASONS.notIssuedByAnchor] as const;

/** The certificate the peer of a TLS connection presented, or null when it presented none. */
export function peerCertificateOf(socket: TLSSocket): X509Certificate | null {
  const certificate = socket.getPeerX509Certificate();
  if (certificate !== undefined) return certificate;
  const legacy = socket.getPeerCertificate(true) as { raw?: Buffer } | null;
  return legacy?.raw !== undefined && legacy.raw.length > 0 ? new X509Certificate(legacy.raw) : null;
}

/** SHA-256 of the certificate's DER, upper-case hex without separators: what a refusal is logged with. */
export function thumbprintOf(certificate: X509Certificate): string {
  return certificate.fingerprint256.replaceAll(':', '');
}

/** One warning line for a refusal: the reason and the thumbprint, nothing else from the certificate. */
export function logCertificateRefusal(log: Logger, verdict: CertificateRefusal): void {
  log.warn(
    { event: 'mcp.certificate-refused', reason: verdict.reason, ...(verdict.thumbprint === null ? {} : { thumbprint: verdict.thumbprint }) },
    'mcp.certificate-refused',
  );
}

export function createClientCertificateCheck(profiles: ClientCertificateProfiles, deps: ClientCertificateCheckDeps): ClientCertificateCheck {
  if (profiles.length === 0) return async () => ({ kind: 'unidentified' });
  const now = deps.now ?? Date.now;
  const log = deps.log;
  const secrets = deps.secrets ?? createSecretCache({ env: deps.env, setting: SECTION });
  const walk: readonly Profile[] = profiles.map((profile, p) => ({
    name: profile.Name,
    required: profile.Requirement === 'Required',
    names: profile.SubjectAlternativeNames,
    anchors: profile.TrustAnchors.map((anchor, a) => ({ ref: anchor.SecretReference, name: anchor.Name, setting: `${SECTION}:${p}:TrustAnchors:${a}` })),
  }));
  const anyRequired = walk.some((profile) => profile.required);
  const refs = [...new Set(walk.flatMap((profile) => profile.anchors.map((anchor) => anchor.ref)))];
  secrets.refresh(refs);

  /** Parsed material by reference, kept while the cache hands back the same material. */
  const parsed = new Map<string, { material: string; load: AnchorLoad }>();
  /** The cause last logged for an anchor that does not load; absent while it loads. */
  const reported = new Map<Anchor, string>();
  /**
   * Whether a certificate (by thumbprint) was issued by an authority: a pure
   * function of the two, remembered while the authority's material is
   * unchanged (a new material parses to new objects). An ECDSA verification
   * costs about 200 µs of main-thread time, more than the rest of the check.
   */
  const issuedBy = new WeakMap<X509Certificate, Map<string, boolean>>();
  const wasIssuedBy = (certificate: X509Certificate, thumbprint: string, authority: X509Certificate): boolean => {
    let known = issuedBy.get(authority);
    if (known === undefined) {
      known = new Map();
      issuedBy.set(authority, known);
    }
    let issued = known.get(thumbprint);
    if (issued === undefined) {
      issued = certificate.checkIssued(authority) && certificate.verify(authority.publicKey);
      if (known.size >= MAX_REMEMBERED_PER_AUTHORITY) known.clear();
      known.set(thumbprint, issued);
    }
    return issued;
  };

  const loadOf = (ref: string): AnchorLoad => {
    let material: string;
    try {
      material = secrets.read(ref);
    } catch (err) {
      return { kind: 'failed', cause: 'its secret reference could not be read', err };
    }
    const held = parsed.get(ref);
    if (held?.material === material) return held.load;
    const load = parseAnchor(material);
    parsed.set(ref, { material, load });
    return load;
  };

  /** Each anchor's load as of now, logging the ones whose state changed. */
  const loadAnchors = (): Map<Anchor, AnchorLoad> => {
    const loads = new Map<Anchor, AnchorLoad>();
    for (const profile of walk) {
      for (const anchor of profile.anchors) {
        const load = loadOf(anchor.ref);
        loads.set(anchor, load);
        const previous = reported.get(anchor);
        if (load.kind === 'failed' && previous !== load.cause) {
          reported.set(anchor, load.cause);
          const fields = { event: 'mcp.certificate-anchor-failed', setting: anchor.setting, anchor: anchor.name, profile: profile.name, cause: load.cause };
          log.error(load.err === undefined ? fields : { ...fields, err: load.err }, 'mcp.certificate-anchor-failed');
        } else if (load.kind === 'loaded' && previous !== undefined) {
          reported.delete(anchor);
          log.info(
            { event: 'mcp.certificate-anchor-loaded', setting: anchor.setting, anchor: anchor.name, profile: profile.name },
            'mcp.certificate-anchor-loaded',
          );
        }
      }
    }
    return loads;
  };

  return async ({ certificate }) => {
    if (certificate === null) return anyRequired ? { kind: 'refused', thumbprint: null, reason: REFUSAL_REASONS.noCertificate } : { kind: 'unidentified' };
    const thumbprint = thumbprintOf(certificate);
    await secrets.fresh(refs);
    const loads = loadAnchors();
    const intrinsic = intrinsicRefusal(certificate, now());
    if (intrinsic !== null) return { kind: 'refused', thumbprint, reason: intrinsic };
    let furthest = 0;
    for (const profile of walk) {
      const reached = judgeAgainst(certificate, profile, loads, (authority) => wasIssuedBy(certificate, thumbprint, authority));
      if (reached === 'accepted') return { kind: 'identified', profile: profile.name };
      furthest = Math.max(furthest, reached);
    }
    return { kind: 'refused', thumbprint, reason: PROFILE_REASONS[furthest]! };
  };
}

/** What refuses a certificate whatever the profile: its key usage and its validity period. */
function intrinsicRefusal(certificate: X509Certificate, at: number): string | null {
  // Node names the extended key usage `keyUsage` (OIDs); undefined when the extension is absent.
  if (!(certificate.keyUsage ?? []).includes(CLIENT_AUTHENTICATION_OID)) return REFUSAL_REASONS.noClientAuthentication;
  if (!(Date.parse(certificate.validFrom) <= at)) return REFUSAL_REASONS.notYetValid;
  if (!(at <= Date.parse(certificate.validTo))) return REFUSAL_REASONS.expired;
  return null;
}

/** 'accepted', or how far the certificate got (an index of PROFILE_REASONS). */
function judgeAgainst(
  certificate: X509Certificate,
  profile: Profile,
  loads: Map<Anchor, AnchorLoad>,
  issuedBy: (authority: X509Certificate) => boolean,
): 'accepted' | 0 | 1 | 2 {
  // Names first: they are cheap and tell which profile a certificate is meant for; signatures are checked only then.
  if (!profile.names.some((name) => certificate.checkHost(name, { subject: 'never', wildcards: false }) !== undefined)) return 0;
  const authorities = profile.anchors.flatMap((anchor) => {
    const load = loads.get(anchor);
    return load?.kind === 'loaded' ? load.authorities : [];
  });
  if (authorities.length === 0) return 1;
  return authorities.some(issuedBy) ? 'accepted' : 2;
}

/** The authorities in an anchor's PEM material: at least one CERTIFICATE block, every block a certificate authority. */
function parseAnchor(material: string): AnchorLoad {
  const authorities: X509Certificate[] = [];
  for (const [block, label] of material.matchAll(PEM_BLOCK)) {
    if (label !== 'CERTIFICATE') return { kind: 'failed', cause: 'it holds a PEM block that is not a certificate' };
    let authority: X509Certificate;
    try {
      authority = new X509Certificate(block);
    } catch (err) {
      return { kind: 'failed', cause: 'it holds a certificate that does not parse', err };
    }
    if (!authority.ca) return { kind: 'failed', cause: 'it holds a certificate that is not a certificate authority' };
    authorities.push(authority);
  }
  if (authorities.length === 0) return { kind: 'failed', cause: 'it holds no PEM certificate' };
  return { kind: 'loaded', authorities };
}
