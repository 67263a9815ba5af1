/**
 * `status`, `profiles`, `switch <name>`, `logout [name]`: the session check
 * and the profiles kept in the credential file. Only `status` talks to the
 * deployment; `logout` forgets a profile here and revokes nothing there.
 */
import type { Sade } from 'sade';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { readCredentialFile, writeCredentialFile, type StoredProfile } from '../credential-file.ts';
import { byName, chooseProfile } from '../profiles.ts';
import type { Run } from './run.ts';

function signInWords(profile: StoredProfile): string {
  switch (profile.mode) {
    case 'key':
      return 'API key';
    case 'keypair':
      return `key pair (${profile.privateKey})`;
    default:
      return `OAuth, ${profile.mode} (${profile.oauth?.issuer ?? 'unknown issuer'}, client ${profile.oauth?.clientId ?? 'unknown'}; access token until ${profile.oauth?.accessTokenExpiresAt ?? 'unknown'})`;
  }
}

async function status(ctx: Context): Promise<void> {
  await withConnection(ctx, async ({ name, profile, session }) => {
    const isDefault = readCredentialFile(ctx.dir).current === name;
    const value = {
      profile: name,
      default: isDefault,
      endpoint: profile.endpoint,
      mode: profile.mode,
      service: session.service,
      deploymentVersion: session.version,
      clientVersion: ctx.clientVersion,
      credential: session.credential,
      permissions: session.permissions,
    };
    ctx.out.reading(value, () =>
      ctx.out.pairs([
        ['Profile', `${name}${isDefault ? ' (default)' : ''}`],
        ['Endpoint', profile.endpoint],
        ['Sign-in', signInWords(profile)],
        ['Deployment', `${session.service} ${session.version}`],
        ['Client', ctx.clientVersion],
        ['Credential', session.credential],
        ['Permissions', session.permissions.length > 0 ? session.permissions.join(', ') : 'none'],
      ]),
    );
  });
}

async function profiles(ctx: Context): Promise<void> {
  const document = readCredentialFile(ctx.dir);
  const rows = Object.entries(document.profiles)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, p]) => ({
      name,
      default: name === document.current,
      endpoint: p.endpoint,
      mode: p.mode,
      certificatePinned: p.certificateSha256 !== undefined,
      clearText: new URL(p.endpoint).protocol === 'http:',
      signedInAt: p.signedInAt,
    }));
  if (rows.length === 0 && ctx.out.format === 'table') {
    ctx.out.note('No profile is stored; run mailcairn login --endpoint <address>.');
    return;
  }
  ctx.out.reading({ current: document.current, profiles: rows }, () =>
    ctx.out.table(
      ['', 'NAME', 'ENDPOINT', 'MODE', 'SIGNED IN'],
      rows.map((r) => [r.default ? '*' : '', r.name, r.endpoint + (r.certificatePinned ? ' (pinned)' : ''), r.mode, r.signedInAt]),
    ),
  );
}

async function switchTo(ctx: Context, name: string | undefined): Promise<void> {
  const document = readCredentialFile(ctx.dir);
  const chosen = byName(document, name ?? '', 'switch');
  document.current = chosen.name;
  writeCredentialFile(ctx.dir, document);
  ctx.out.reading({ current: chosen.name, endpoint: chosen.profile.endpoint }, () => `Profile ${chosen.name} (${chosen.profile.endpoint}) is now the default.`);
}

async function logout(ctx: Context, name: string | undefined): Promise<void> {
  const document = readCredentialFile(ctx.dir);
  const chosen = name !== undefined ? byName(document, name, 'logout') : chooseProfile(document, ctx.endpointOption, ctx.env);
  delete document.profiles[chosen.name];
  const wasDefault = document.current === chosen.name;
  if (wasDefault) document.current = null;
  writeCredentialFile(ctx.dir, document);
  ctx.out.reading({ forgotten: chosen.name, endpoint: chosen.profile.endpoint, current: document.current }, () =>
    [
      `Forgot profile ${chosen.name} (${chosen.profile.endpoint})${wasDefault ? '; no profile is the default now' : ''}.`,
      chosen.profile.mode === 'interactive' || chosen.profile.mode === 'device'
        ? 'Nothing was revoked: the refresh token stays valid at the authorization server until it expires or is revoked there.'
        : 'Nothing was revoked: the credential stays valid at the deployment until its entry is removed or expires' +
          (chosen.profile.mode === 'keypair' ? ', and the private key file stays where it is.' : '.'),
    ].join('\n'),
  );
}

export function registerSession(program: Sade, run: Run): void {
  program
    .command('status')
    .describe('Check the session: the profile, the credential that authenticated, its permissions and both versions.')
    .action(run((ctx) => status(ctx)));
  program
    .command('profiles')
    .describe('List the stored profiles; * marks the default.')
    .action(run((ctx) => profiles(ctx)));
  program
    .command('switch <profile>')
    .describe('Make a stored profile the default.')
    .action(run((ctx, _options, [name]) => switchTo(ctx, name)));
  program
    .command('logout [profile]')
    .describe('Forget one profile (the named one, else the one --endpoint, SERVICE_ENDPOINT or the default chooses). Revokes nothing.')
    .action(run((ctx, _options, [name]) => logout(ctx, name)));
}
