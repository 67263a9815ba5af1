/**
 * Opening a command's conversation with a deployment: choose the profile
 * (profiles.ts), present its credential, read the session report, and judge
 * the version agreement before anything else is sent (docs/cli.md
 * "Versions"). A command from another release line stops here, having
 * sent nothing but the session request.
 */
import { createAdminClient, type AdminClient, type Presenter, type SessionReport } from './admin-client.ts';
import type { Context } from './context.ts';
import { readCredentialFile, unseal, type StoredProfile } from './credential-file.ts';
import { CliFailure } from './failure.ts';
import { chooseProfile } from './profiles.ts';
import { judgeAgreement } from './version-agreement.ts';

export type Connection = {
  readonly name: string;
  readonly profile: StoredProfile;
  readonly client: AdminClient;
  readonly session: SessionReport;
};

/**
 * A presenter whose module is loaded at its first use: signing an assertion needs jose, and an OAuth
 * sign-in its renewal code, which a key-mode command never loads (docs/performance.md "Client start-up").
 * A failure to build it (an unreadable private key) is raised by that first request, before anything is sent.
 */
function loadedAtFirstUse(build: () => Promise<Presenter>): Presenter {
  let built: Promise<Presenter> | undefined;
  return async () => {
    built ??= build();
    return (await built)();
  };
}

/** The credential headers of a stored profile: the unsealed API key, a fresh assertion per request, or the OAuth access token (renewed when due). */
export function presenterFor(dir: string, name: string, profile: StoredProfile): Presenter {
  if (profile.mode === 'interactive' || profile.mode === 'device') {
    return loadedAtFirstUse(async () => (await import('./oauth/tokens.ts')).oauthPresenter(dir, name, profile));
  }
  if (profile.mode === 'key') {
    if (profile.sealedKey === undefined) throw new CliFailure(`Profile ${name} holds no credential; log in again.`);
    const key = unseal(dir, profile.sealedKey, { profile: name, endpoint: profile.endpoint });
    return async () => ({ 'x-api-key': key });
  }
  const { privateKey } = profile;
  if (privateKey === undefined) throw new CliFailure(`Profile ${name} names no private key; log in again.`);
  return loadedAtFirstUse(async () => {
    const { loadSigningKey, signAssertion } = await import('./assertion.ts');
    const signing = loadSigningKey(privateKey);
    return async () => ({ authorization: `Bearer ${await signAssertion(signing)}` });
  });
}

/** Warns of, or refuses, a version disagreement; the session report was the only request sent. */
export function agreeOnVersion(ctx: Context, endpoint: string, deploymentVersion: string): void {
  const agreement = judgeAgreement(ctx.clientVersion, deploymentVersion, endpoint);
  if (agreement.kind === 'other-line') throw new CliFailure(agreement.message);
  if (agreement.kind !== 'same') ctx.out.warn(agreement.message);
}

export async function connect(ctx: Context, options: { signal?: AbortSignal } = {}): Promise<Connection> {
  const { name, profile } = chooseProfile(readCredentialFile(ctx.dir), ctx.endpointOption, ctx.env);
  const client = createAdminClient({
    endpoint: profile.endpoint,
    present: presenterFor(ctx.dir, name, profile),
    certificateSha256: profile.certificateSha256,
    profile: name,
    signal: options.signal,
  });
  try {
    const session = await client.session();
    agreeOnVersion(ctx, profile.endpoint, session.version);
    return { name, profile, client, session };
  } catch (err) {
    await client.close();
    throw err;
  }
}

/** Runs `work` on an open connection and closes it whatever happens. */
export async function withConnection<T>(ctx: Context, work: (connection: Connection) => Promise<T>, options: { signal?: AbortSignal } = {}): Promise<T> {
  const connection = await connect(ctx, options);
  try {
    return await work(connection);
  } finally {
    await connection.client.close();
  }
}
