/**
 * Profiles: what an endpoint is written as, what a profile is called, and
 * which profile a command talks to (docs/cli.md "Which deployment"): the
 * `--endpoint` option (a profile name or an address), then the environment
 * variable `SERVICE_ENDPOINT`, then the profile last switched to.
 *
 * An address names a profile through the endpoint it stores: a command never
 * talks to an address nobody logged in to, because the credential and the
 * certificate pin come from the profile.
 */
import { isIP } from 'node:net';
import type { CredentialDocument, StoredProfile } from './credential-file.ts';
import { CliFailure, usage } from './failure.ts';

export const ENDPOINT_VARIABLE = 'SERVICE_ENDPOINT';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Written with a scheme: meant as an address (only http and https are accepted as one), never a profile name. */
export function isAddress(text: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
}

/**
 * The base address of an endpoint, as stored and compared: scheme, host and
 * port, and a path prefix kept for a reverse proxy (a trailing `/api/admin`
 * and slashes dropped). Null for anything else, user information included.
 */
export function parseEndpoint(text: string): string | null {
  if (!/^https?:\/\//i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return null;
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api\/admin$/, '');
  return `${url.protocol}//${url.host}${path}`;
}

export function requireEndpoint(text: string, source: string): string {
  const endpoint = parseEndpoint(text);
  if (endpoint === null)
    throw usage(`${source} is not an endpoint address: write it as https://host[:port] (http:// for clear text), without user information, query or fragment.`);
  return endpoint;
}

export function isValidName(name: string): boolean {
  return NAME.test(name);
}

export function requireName(name: string): string {
  if (!isValidName(name)) throw usage(`A profile name is 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit.`);
  return name;
}

/** The name a profile gets when login names none: the endpoint's host name. */
export function defaultName(endpoint: string): string {
  const host = new URL(endpoint).hostname.replace(/^\[|\]$/g, '');
  // An IPv6 address may start with a colon, which no name may.
  const name = isIP(host) === 6 ? `ipv6-${host.replaceAll(':', '-')}` : host;
  return isValidName(name) ? name : 'default';
}

/** Whether a host can only be this machine: `localhost`, 127.0.0.0/8, ::1 (clear text to it crosses no network). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host);
  return false;
}

export type ChosenProfile = { readonly name: string; readonly profile: StoredProfile };

const LOGIN_HINT = 'mailcairn login --endpoint <address>';

function byAddress(document: CredentialDocument, endpoint: string, source: string): ChosenProfile {
  const matches = Object.entries(document.profiles).filter(([, p]) => p.endpoint === endpoint);
  if (matches.length === 0) throw new CliFailure(`Not signed in to ${endpoint} (named by ${source}); run mailcairn login --endpoint ${endpoint}.`);
  const current = matches.find(([name]) => name === document.current);
  if (current) return { name: current[0], profile: current[1] };
  if (matches.length > 1) throw new CliFailure(`Several profiles use ${endpoint} (${matches.map(([n]) => n).join(', ')}); name one with --endpoint <name>.`);
  return { name: matches[0]![0], profile: matches[0]![1] };
}

export function byName(document: CredentialDocument, name: string, source: string): ChosenProfile {
  const profile = Object.hasOwn(document.profiles, name) ? document.profiles[name] : undefined;
  if (profile === undefined) throw new CliFailure(`There is no profile named '${name}' (named by ${source}); mailcairn profiles lists them.`);
  return { name, profile };
}

/** The profile a command talks to, by the order of "Client rules" 3. */
export function chooseProfile(document: CredentialDocument, option: string | undefined, env: NodeJS.ProcessEnv): ChosenProfile {
  const fromEnv = env[ENDPOINT_VARIABLE]?.trim();
  const [given, source] = option !== undefined ? [option, '--endpoint'] : fromEnv ? [fromEnv, ENDPOINT_VARIABLE] : [undefined, ''];
  if (given !== undefined) return isAddress(given) ? byAddress(document, requireEndpoint(given, source), source) : byName(document, given, source);
  if (document.current === null) {
    const names = Object.keys(document.profiles);
    if (names.length === 0) throw new CliFailure(`Not signed in: no profile is stored; run ${LOGIN_HINT}.`);
    throw new CliFailure(`No default profile is set; run mailcairn switch <name> or name one with --endpoint (profiles: ${names.join(', ')}).`);
  }
  return byName(document, document.current, 'the default profile');
}
