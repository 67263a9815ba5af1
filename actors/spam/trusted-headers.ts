/**
 * The trusted-header stage: a verdict a receiving server of the owner's
 * wrote into the message's header, believed only when that server wrote it
 * (docs/rules-and-spam.md "Trusted headers").
 *
 * Who wrote a header is told by the `Received:` lines: each hop prepends
 * its own `Received: ... by <host>` and its filters prepend their headers
 * above it, so the headers between one hop's `Received:` and the one above
 * it were written by that hop. Walking down from the top, each `Received:`
 * whose `by` host is a configured trusted server vouches for the headers
 * above it; the walk stops at the first hop that is not trusted, and at a
 * trusted host met a second time (a sender can write a `Received:` naming
 * the owner's server into its own header; the real one is above it).
 * Everything the sender wrote lies below the trusted hops: a spoofed
 * `X-Spam-Flag: YES` is never read.
 *
 * Within the trusted headers, families are read in the configured order and
 * the topmost header of a name wins (the last filter on the way in).
 * Families (`Spam:TrustedHeaders`):
 * - SpamAssassin: `X-Spam-Status: Yes|No, score=S required=R ...` (mapped
 *   S / R), else `X-Spam-Flag: YES|NO` (1 or 0);
 * - Rspamd: `X-Spamd-Result: default: True|False [S / R]` (mapped S / R),
 *   else `X-Spam: Yes|No` (1 or 0).
 *
 * Pure: reads the raw header section, logs nothing. Importable from
 * `actors/spam/` only.
 */

export type HeaderFamily = 'SpamAssassin' | 'Rspamd';
export type TrustedVerdict = { score: number };
export type Header = { name: string; value: string };

/** The header section's fields in order, unfolded (RFC 5322 2.2.3); bytes read as Latin-1 (verdict headers are ASCII). */
export function headerFields(raw: Uint8Array): Header[] {
  const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const section = end === -1 ? text : text.slice(0, end);
  const fields: Header[] = [];
  for (const line of section.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && fields.length > 0) {
      fields[fields.length - 1]!.value += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    fields.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() });
  }
  return fields;
}

/** The host a `Received:` line names after `by`, lower case without a trailing dot; null when it names none. */
export function receivedBy(value: string): string | null {
  const match = /(?:^|[\s;)])by\s+([^\s;()]+)/i.exec(value);
  return match === null ? null : match[1]!.toLowerCase().replace(/\.$/, '');
}

/** The headers the trusted hops wrote, top first (empty when the topmost hop is not trusted). */
export function trustedRegion(fields: readonly Header[], trustedHosts: ReadonlySet<string>): Header[] {
  const region: Header[] = [];
  const seen = new Set<string>();
  let pending: Header[] = [];
  for (const field of fields) {
    if (field.name !== 'received') {
      pending.push(field);
      continue;
    }
    const host = receivedBy(field.value);
    if (host === null || !trustedHosts.has(host) || seen.has(host)) return region;
    seen.add(host);
    region.push(...pending);
    pending = [];
  }
  // No Received: below the last trusted hop: what follows is the sender's own (a message with no hop at all trusts nothing).
  return region;
}

const clamp01 = (n: number): number => Math.min(1, Math.max(0, n));

/** score / required clamped to 0..1; a required score of 0 or less leaves the sign (spam when above 0). */
export function mapScore(score: number, required: number): number {
  if (!Number.isFinite(score) || !Number.isFinite(required)) return Number.NaN;
  if (required <= 0) return score > 0 ? 1 : 0;
  return clamp01(score / required);
}

function yesNo(value: string): number | null {
  const word = /^\s*(yes|no)\b/i.exec(value)?.[1]?.toLowerCase();
  return word === 'yes' ? 1 : word === 'no' ? 0 : null;
}

function spamAssassin(fields: readonly Header[]): TrustedVerdict | null {
  const status = fields.find((f) => f.name === 'x-spam-status');
  if (status !== undefined) {
    const score = /\bscore=(-?\d+(?:\.\d+)?)/i.exec(status.value)?.[1];
    const required = /\brequired=(-?\d+(?:\.\d+)?)/i.exec(status.value)?.[1];
    if (score !== undefined && required !== undefined) {
      const mapped = mapScore(Number(score), Number(required));
      if (!Number.isNaN(mapped)) return { score: mapped };
    }
    const flag = yesNo(status.value);
    if (flag !== null) return { score: flag };
  }
  const flag = fields.find((f) => f.name === 'x-spam-flag');
  const value = flag === undefined ? null : yesNo(flag.value);
  return value === null ? null : { score: value };
}

function rspamd(fields: readonly Header[]): TrustedVerdict | null {
  const result = fields.find((f) => f.name === 'x-spamd-result');
  if (result !== undefined) {
    const m = /\[\s*(-?\d+(?:\.\d+)?)\s*\/\s*(-?\d+(?:\.\d+)?)\s*\]/.exec(result.value);
    if (m !== null) {
      const mapped = mapScore(Number(m[1]), Number(m[2]));
      if (!Number.isNaN(mapped)) return { score: mapped };
    }
  }
  const flag = fields.find((f) => f.name === 'x-spam');
  const value = flag === undefined ? null : yesNo(flag.value);
  return value === null ? null : { score: value };
}

/** The verdict the trusted servers wrote, or null (none trusted, or none written). */
export function trustedVerdict(raw: Uint8Array, trustedHosts: ReadonlySet<string>, families: readonly HeaderFamily[]): TrustedVerdict | null {
  if (trustedHosts.size === 0 || families.length === 0) return null;
  const region = trustedRegion(headerFields(raw), trustedHosts);
  if (region.length === 0) return null;
  // Families in the configured order; within one, the topmost of each header (the last filter on the way in).
  for (const family of families) {
    const found = family === 'SpamAssassin' ? spamAssassin(region) : rspamd(region);
    if (found !== null) return found;
  }
  return null;
}
