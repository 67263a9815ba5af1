/**
 * `mailcairn login`: verifies a credential against the session route, then
 * stores the profile and selects it (docs/cli.md "Signing in").
 *
 * Modes: `key` reads one API key from standard input (never an argument,
 * never echoed); `keypair` stores only the absolute path of a private key
 * and signs a fresh assertion per request; `interactive` and `device` sign
 * in through the deployment's OAuth authorization server (cli/oauth/) and
 * store the tokens it issues.
 *
 * Transport decisions, taken before any credential is sent:
 * - `http://` to a loopback host is accepted (nothing crosses a network);
 *   `http://` elsewhere needs `--allow-clear-text`, or a yes typed on a
 *   terminal; a non-interactive login without the flag is refused.
 * - `https://` whose certificate this machine trusts needs nothing; one it
 *   does not trust needs `--trust-untrusted-certificate` (or a yes on a
 *   terminal, after the fingerprint is shown), and its SHA-256 fingerprint
 *   is pinned in the profile.
 * Nothing is stored unless the deployment admitted the credential and runs
 * this client's release line.
 */
import type { Sade } from 'sade';
import { createAdminClient, networkFailure, ANSWER_LIMIT_MS, untrusted } from '../admin-client.ts';
import { loadSigningKey, requireKeyPath } from '../assertion.ts';
import { probeCertificate } from '../certificate.ts';
import { agreeOnVersion, presenterFor } from '../connection.ts';
import type { Context } from '../context.ts';
import { readCredentialFile, seal, writeCredentialFile, type StoredProfile } from '../credential-file.ts';
import { CliFailure, usage } from '../failure.ts';
import { flag, optionalText, type Options } from '../options.ts';
import { ENDPOINT_VARIABLE, defaultName, isAddress, isLoopbackHost, requireEndpoint, requireName } from '../profiles.ts';
import { askYesNo, isTerminal, readSecret } from '../standard-input.ts';
import { oauthOptions, oauthSignIn, type OAuthSignIn } from '../oauth/sign-in.ts';
import type { Run } from './run.ts';

const MODES = ['key', 'keypair', 'interactive', 'device'] as const;
type Mode = (typeof MODES)[number];

function modeOf(options: Options): Mode {
  const mode = (optionalText(options, 'mode') ?? 'key') as Mode;
  if (!MODES.includes(mode)) throw usage(`--mode takes key, keypair, interactive or device.`);
  if (mode === 'interactive' || mode === 'device') return mode;
  for (const oauthOnly of ['client-id', 'redirect-uri', 'issuer']) {
    if (optionalText(options, oauthOnly) !== undefined) throw usage(`--${oauthOnly} belongs to the interactive and device modes.`);
  }
  return mode;
}

/** The address to sign in to and the profile name it gets. */
function target(ctx: Context, options: Options): { endpoint: string; name: string } {
  const given = optionalText(options, 'endpoint') ?? (ctx.env[ENDPOINT_VARIABLE]?.trim() || undefined);
  if (given === undefined) throw usage('login needs --endpoint <address> (https://host:port), or SERVICE_ENDPOINT set to one.');
  const named = optionalText(options, 'name');
  if (isAddress(given)) {
    const endpoint = requireEndpoint(given, '--endpoint');
    return { endpoint, name: requireName(named ?? defaultName(endpoint)) };
  }
  // A profile name: sign in again to the endpoint it stores.
  const existing = readCredentialFile(ctx.dir).profiles;
  const profile = Object.hasOwn(existing, given) ? existing[given] : undefined;
  if (profile === undefined) throw new CliFailure(`There is no profile named '${given}'; to sign in to a new endpoint, name its address (https://host:port).`);
  return { endpoint: profile.endpoint, name: requireName(named ?? given) };
}

async function ask(ctx: Context, question: string): Promise<boolean> {
  return isTerminal(ctx.io.stdin) && askYesNo(ctx.io, question);
}

/** The transport checks; answers the fingerprint to pin, if any, and whether clear text was accepted. */
async function transport(ctx: Context, endpoint: string, options: Options): Promise<{ pin?: string; clearText?: true }> {
  const url = new URL(endpoint);
  if (url.protocol === 'http:') {
    if (isLoopbackHost(url.hostname)) return {};
    if (flag(options, 'allow-clear-text')) return { clearText: true };
    const question = `${endpoint} is clear text: the credential and every answer would cross the network readable. Send them anyway?`;
    if (await ask(ctx, question)) return { clearText: true };
    throw new CliFailure(
      `Refused to sign in to ${endpoint} over clear text: anyone on the way could read the credential. Use https, or pass --allow-clear-text if the network between here and the deployment is private.`,
    );
  }
  let probe;
  try {
    probe = await probeCertificate(endpoint, ANSWER_LIMIT_MS);
  } catch (err) {
    throw networkFailure(err, endpoint, false);
  }
  if (probe.trusted) return {};
  if (flag(options, 'trust-untrusted-certificate')) return { pin: probe.sha256 };
  if (isTerminal(ctx.io.stdin)) {
    ctx.out.note(`${endpoint} presents a certificate this machine does not trust (${probe.reason}).\nSHA-256 fingerprint: ${probe.sha256}`);
    if (await ask(ctx, "Is this the fingerprint of the deployment's certificate? Pin it in this profile?")) return { pin: probe.sha256 };
  }
  throw untrusted(endpoint, probe.reason ?? 'untrusted');
}

async function login(ctx: Context, options: Options): Promise<void> {
  const mode = modeOf(options);
  const oauth = mode === 'interactive' || mode === 'device' ? oauthOptions(mode, options) : undefined;
  const { endpoint, name } = target(ctx, options);
  const privateKey = mode === 'keypair' ? requireKeyPath(optionalText(options, 'private-key')) : undefined;
  if (mode === 'key' && optionalText(options, 'private-key') !== undefined) throw usage('--private-key belongs to --mode keypair.');
  if (privateKey) loadSigningKey(privateKey); // refused now, before anything is sent
  const { pin, clearText } = await transport(ctx, endpoint, options);

  const apiKey = mode === 'key' ? await readSecret(ctx.io, 'API key', `API key for ${endpoint}: `) : undefined;
  const signIn: OAuthSignIn | undefined =
    oauth !== undefined && (mode === 'interactive' || mode === 'device') ? await oauthSignIn(ctx, mode, { endpoint, pin, name }, oauth) : undefined;
  const stored: StoredProfile = {
    endpoint,
    mode,
    ...(privateKey ? { privateKey } : {}),
    ...(pin ? { certificateSha256: pin } : {}),
    ...(clearText ? { clearText } : {}),
    signedInAt: new Date().toISOString(),
  };
  const present = apiKey !== undefined ? async () => ({ 'x-api-key': apiKey }) : signIn !== undefined ? signIn.present : presenterFor(ctx.dir, name, stored);
  const client = createAdminClient({ endpoint, present, certificateSha256: pin, profile: name });
  let session;
  try {
    session = await client.session();
  } catch (err) {
    // The one refusal the session route answers is the credential's (401, or an empty 403 for a token's unauthorized subject).
    if (err instanceof CliFailure && err.refusal && signIn !== undefined) {
      throw new CliFailure(
        `The deployment at ${endpoint} refused the token the sign-in obtained (its subject is not among the entry's AuthorizedSubjects for that server, or its audience or scopes are not the entry's); nothing was stored.`,
      );
    }
    if (err instanceof CliFailure && err.refusal) {
      throw new CliFailure(`The deployment at ${endpoint} refused this credential (it is unknown there, expired or from another surface); nothing was stored.`);
    }
    throw err;
  } finally {
    await client.close();
  }
  agreeOnVersion(ctx, endpoint, session.version);

  const document = readCredentialFile(ctx.dir);
  const replaced = Object.hasOwn(document.profiles, name) ? document.profiles[name]!.endpoint : null;
  const binding = { profile: name, endpoint };
  document.profiles[name] = {
    ...stored,
    ...(apiKey !== undefined ? { sealedKey: seal(ctx.dir, apiKey, binding) } : {}),
    ...(signIn !== undefined ? signIn.stored(ctx.dir, binding) : {}),
  };
  document.current = name;
  writeCredentialFile(ctx.dir, document);

  ctx.out.reading(
    {
      profile: name,
      endpoint,
      mode,
      credential: session.credential,
      version: session.version,
      permissions: session.permissions,
      certificatePinned: pin !== undefined,
    },
    () =>
      [
        `Signed in to ${endpoint} as profile ${name}, now the default.`,
        `Credential ${session.credential}; deployment version ${session.version}.`,
        `Permissions: ${session.permissions.length > 0 ? session.permissions.join(', ') : 'none'}.`,
      ].join('\n'),
  );
  if (replaced !== null && replaced !== endpoint) ctx.out.note(`Profile ${name} used to name ${replaced}; it now names ${endpoint}.`);
  if (pin) ctx.out.note(`Pinned the certificate with SHA-256 fingerprint ${pin}.`);
  if (session.permissions.length === 0) ctx.out.warn('This credential holds no permission: the deployment will refuse every command but status.');
}

export function registerLogin(program: Sade, run: Run): void {
  program
    .command('login')
    .describe('Verify a credential against the session route, store a profile and select it. The API key (--mode key) is read from standard input.')
    .option('--name', 'Profile name (default: the endpoint host name)')
    .option('--mode', 'key | keypair | interactive | device', 'key')
    .option('--private-key', 'Absolute path of the PEM private key (--mode keypair); only the path is stored')
    .option('--client-id', 'OAuth public client identifier (interactive and device modes)')
    .option('--redirect-uri', 'OAuth loopback redirect (interactive mode; default http://127.0.0.1:8765/)')
    .option('--issuer', 'OAuth authorization server, when the deployment accepts several')
    .option('--allow-clear-text', 'Accept an http:// endpoint that is not on this machine')
    .option('--trust-untrusted-certificate', 'Pin the SHA-256 fingerprint of a certificate this machine does not trust')
    .example('login --endpoint https://admin.example.org:8090 --name prod < operator.key')
    .example('login --endpoint https://admin.example.org:8090 --mode keypair --private-key /home/me/.keys/admin.pem')
    .example('login --endpoint https://admin.example.org:8090 --mode interactive --client-id mailcairn-cli')
    .example('login --endpoint https://admin.example.org:8090 --mode device --client-id mailcairn-cli')
    .action(run((ctx, options) => login(ctx, options)));
}
