/**
 * Building blocks of every section: each helper is a zod schema for one kind
 * of setting, carrying the message an operator reads when the value is wrong
 * and the documentation metadata (`description`, `type`, `range`) that
 * `config/docs.ts` reads back, so a key's docs live next to its rule.
 *
 * Call sites add `.default(...)`, `.prefault(...)` or `.optional()`.
 * Messages never echo a value except numbers and spans, which are not secret.
 */
import { z } from 'zod';
import { isLoopbackHost, parseIp } from '../ip-address.ts';

export type DocMeta = { description: string; type?: string; range?: string };

function wasText(input: unknown): string {
  return typeof input === 'number' ? ` (was ${input})` : '';
}

export function flag(description: string) {
  return z.boolean({ error: 'must be true or false' }).meta({ description });
}

/** A whole number in `[min, max]`; the message names the range and the value. */
export function wholeNumber(min: number, max: number, description: string) {
  const range = `${min} to ${max}`;
  const outside = (iss: { input?: unknown }): string => `must be between ${min} and ${max}${wasText(iss.input)}`;
  return z
    .number({ error: 'must be a number' })
    .int({ error: (iss) => `must be a whole number between ${min} and ${max}${wasText(iss.input)}` })
    .min(min, { error: outside })
    .max(max, { error: outside })
    .meta({ description, range });
}

/** A decimal number in `[min, max]`. */
export function decimal(min: number, max: number, description: string) {
  const outside = (iss: { input?: unknown }): string => `must be between ${min} and ${max}${wasText(iss.input)}`;
  return z
    .number({ error: 'must be a number' })
    .min(min, { error: outside })
    .max(max, { error: outside })
    .meta({ description, range: `${min} to ${max}` });
}

/** Non-empty text of at most `max` characters. */
export function text(description: string, max = 256) {
  return z
    .string({ error: 'must be text' })
    .min(1, { error: 'must not be empty' })
    .max(max, { error: `must be at most ${max} characters` })
    .meta({ description });
}

/** One of a fixed set of words; the message lists them. */
export function choice<const T extends readonly [string, ...string[]]>(values: T, description: string) {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` }).meta({ description, type: values.join(' | ') });
}

export function list<T extends z.ZodType>(item: T, description: string) {
  return z.array(item, { error: 'must be a list' }).meta({ description });
}

/** A lower-case identifier (`alice`, `work-inbox`), safe in logs, URLs and metric tags. */
export function slug(description: string) {
  return z
    .string({ error: 'must be text' })
    .regex(/^[a-z0-9](?:[a-z0-9_-]{0,62})$/, {
      error: 'must be 1 to 63 lower-case letters, digits, - or _, starting with a letter or digit',
    })
    .meta({ description, type: 'identifier' });
}

export function port(description: string) {
  return wholeNumber(0, 65535, description).meta({ description, range: '0 to 65535 (0: any free port)' });
}

/** A port on another machine: 0 means nothing there. */
export function remotePort(description: string) {
  return wholeNumber(1, 65535, description);
}

export function bindAddress(description: string) {
  return z
    .string({ error: 'must be text' })
    .refine((value) => parseIp(value) !== null, {
      error: 'must be an IP address (0.0.0.0 for every IPv4 address, :: for every address)',
    })
    .meta({ description, type: 'IP address' });
}

/** A host name or IP address to connect to. */
export function host(description: string) {
  return z
    .string({ error: 'must be text' })
    .refine(
      (value) =>
        parseIp(value) !== null ||
        /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/.test(value),
      {
        error: 'must be a host name or an IP address',
      },
    )
    .meta({ description, type: 'host' });
}

export function dnsName(description: string) {
  return z
    .string({ error: 'must be text' })
    .refine(isDnsName, { error: 'must be one DNS name in A-label form, lower case (e.g. mail.example.org); no IP address or wildcard' })
    .meta({ description, type: 'DNS name' });
}

export function isDnsName(value: string): boolean {
  if (parseIp(value) !== null || value.length > 253) return false;
  const labels = value.split('.');
  // An all-digit last label would read as an IPv4 address to some resolvers.
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return false;
  return labels.every((label) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label));
}

export type UrlRules = { https?: 'always' | 'unless-loopback' | 'any'; plain?: boolean };

/**
 * An absolute http(s) URL. `https: 'unless-loopback'` refuses clear text to any
 * host but this machine; `plain` refuses user information, query and fragment.
 */
export function httpUrl(description: string, rules: UrlRules = {}) {
  const https = rules.https ?? 'any';
  return z
    .string({ error: 'must be text' })
    .superRefine((value, ctx) => {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be an absolute URL (https://host/path)' });
        return;
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') {
        ctx.addIssue({ code: 'custom', message: 'must be an http or https URL' });
        return;
      }
      if (url.protocol === 'http:' && https === 'always') {
        ctx.addIssue({ code: 'custom', message: 'must be an https URL' });
      }
      if (url.protocol === 'http:' && https === 'unless-loopback' && !isLoopbackHost(url.hostname)) {
        ctx.addIssue({ code: 'custom', message: 'must be an https URL: clear text is only allowed to a loopback host' });
      }
      if (url.username !== '' || url.password !== '') {
        // Always refused: user information in a URL is a secret written inline.
        ctx.addIssue({ code: 'custom', message: 'must not carry user information' });
      }
      if (rules.plain === true && (url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#'))) {
        ctx.addIssue({ code: 'custom', message: 'must not carry a query or fragment' });
      }
    })
    .meta({ description, type: 'URL' });
}

/** An ISO 8601 instant with a zone, or `NoLimit`; parsed to epoch milliseconds (`NoLimit` is Infinity). */
export function lifetime(description: string) {
  const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
  const message = 'must be NoLimit or an ISO 8601 instant with its zone (e.g. 2026-12-31T23:59:59Z)';
  return z
    .string({ error: message })
    .refine((value) => value === 'NoLimit' || (INSTANT.test(value) && Number.isFinite(Date.parse(value))), { error: message })
    .transform((value) => (value === 'NoLimit' ? Number.POSITIVE_INFINITY : Date.parse(value)))
    .meta({ description, type: '`NoLimit` or ISO 8601 instant' });
}
