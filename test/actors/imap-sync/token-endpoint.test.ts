/**
 * The token endpoint's answers against a real authorization server
 * (`oidc-provider`, test/harness/oauth-provider.ts): the account's token
 * redeemer (AccessTokens, actors/imap-sync/oauth-token.ts) names a refused
 * refresh token, a refused client, a wrong endpoint address and an outage for
 * what each is, stops asking after a refusal or a misconfiguration until a
 * new refresh token is stored, waits out a Retry-After, and asks again after
 * an outage without one. Every request the endpoint receives is counted, so
 * "stops asking" is what the provider saw.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { AccessTokens, storeRefreshToken } from '../../../actors/imap-sync/oauth-token.ts';
import { ImapSyncConfig, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { loadConfig } from '../../../config/load.ts';
import { storeSlice } from '../../../config/store-slice.ts';
import { AppError } from '../../../runtime/errors.ts';
import { newKeyRing } from '../../../runtime/keyring/keyring.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openSlice } from '../../../runtime/store/open-slice.ts';
import { systemChildren } from '../../../service/system-children.ts';
import { startOAuthProvider } from '../../harness/oauth-provider.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';

t.setTimeout(120_000);

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'granted';
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

t.test('refused credential, misconfiguration and outage at a real token endpoint', async (t) => {
  let answerFirst: ((res: import('node:http').ServerResponse) => void) | null = null;
  const provider = await startOAuthProvider({
    users: ['alice'],
    rotateRefreshTokens: false,
    intercept: (req, res) => {
      if (answerFirst === null || !req.url?.startsWith('/token')) return false;
      answerFirst(res);
      return true;
    },
  });
  t.teardown(() => provider.stop());

  const dir = tempDir(t);
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const secretFile = join(dir, 'client-secret');
  writeFileSync(secretFile, provider.client.secret, { mode: 0o600 });
  const wrongSecretFile = join(dir, 'wrong-secret');
  writeFileSync(wrongSecretFile, 'not-the-client-secret', { mode: 0o600 });
  const oauth = (over: Record<string, unknown> = {}) => ({
    TokenEndpoint: provider.tokenEndpoint,
    ClientId: provider.client.id,
    ClientSecret: `file:${secretFile}`,
    Scopes: provider.scopes,
    ...over,
  });
  const accounts = [
    { id: 'good', oauth: oauth() },
    { id: 'wrongclient', oauth: oauth({ ClientSecret: `file:${wrongSecretFile}` }) },
    { id: 'wrongaddress', oauth: oauth({ TokenEndpoint: `${provider.issuer}/no-token-here` }) },
  ];
  const configFile = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: join(dir, 'mailcairn.db') },
    DataEncryption: { KeyRing: `file:${keyRingFile}` },
    MailSynchronization: { ConnectTimeout: '00:00:05' },
    Accounts: accounts.map((a) => ({
      Id: a.id,
      Imap: { Host: '127.0.0.1', Port: 1, Security: 'None', Username: 'alice', OAuth: a.oauth },
      Folders: [{ Alias: 'inbox' }],
    })),
  });
  const config = loadConfig({ file: configFile, env: {} });
  const children = systemChildren(config);
  const db = openSlice(storeSlice(config));
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(
    db,
    accounts.map((a) => a.id),
  );
  const imapConfig = (id: string) => ImapSyncConfig.parse(children.find((c) => c.id === syncActorId(id))!.config);
  const tokenRequests = () => provider.requests().filter((r) => r.startsWith('/token')).length;

  await t.test('a revoked refresh token: refused, then parked until a new one is stored', async (t) => {
    const cfg = imapConfig('good');
    const revoked = await provider.mintRefreshToken('alice');
    await provider.revoke(revoked);
    storeRefreshToken(db, cfg, revoked, Date.now());
    const tokens = new AccessTokens(db, cfg);
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_REFRESH_REFUSED', 'invalid_grant is a refused refresh token');
    const asked = tokenRequests();
    for (let i = 0; i < 3; i++) t.equal(await codeOf(tokens.current()), 'E_OAUTH_REFRESH_REFUSED', `ask ${i + 2}: still refused`);
    t.equal(tokenRequests(), asked, 'the endpoint was not asked again');
    storeRefreshToken(db, cfg, await provider.mintRefreshToken('alice'), Date.now());
    tokens.grantReplaced();
    t.equal(await codeOf(tokens.current()), 'granted', 'a new refresh token is redeemed');
  });

  await t.test('a wrong client secret: the client refused, parked', async (t) => {
    const cfg = imapConfig('wrongclient');
    storeRefreshToken(db, cfg, await provider.mintRefreshToken('alice'), Date.now());
    const tokens = new AccessTokens(db, cfg);
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_CLIENT_REFUSED', 'invalid_client is the client refused');
    const asked = tokenRequests();
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_CLIENT_REFUSED');
    t.equal(tokenRequests(), asked, 'the endpoint was not asked again');
  });

  await t.test('an address that is no token endpoint: misconfiguration, parked', async (t) => {
    const cfg = imapConfig('wrongaddress');
    storeRefreshToken(db, cfg, await provider.mintRefreshToken('alice'), Date.now());
    const tokens = new AccessTokens(db, cfg);
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_MISCONFIGURED', 'a 404 is a misconfiguration, not an outage');
    const asked = provider.requests().length;
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_MISCONFIGURED');
    t.equal(provider.requests().length, asked, 'the endpoint was not asked again');
  });

  await t.test('a 200 without an access token: misconfiguration', async (t) => {
    const cfg = imapConfig('good');
    const tokens = new AccessTokens(db, cfg);
    answerFirst = (res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"token_type":"Bearer"}');
    };
    t.teardown(() => (answerFirst = null));
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_MISCONFIGURED');
  });

  await t.test('an outage: 503 with Retry-After is waited out, then the endpoint is asked again', async (t) => {
    const cfg = imapConfig('good');
    const tokens = new AccessTokens(db, cfg);
    answerFirst = (res) => {
      res.statusCode = 503;
      res.setHeader('retry-after', '2');
      res.end();
    };
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_UNAVAILABLE', 'a 503 is an outage');
    answerFirst = null;
    const asked = tokenRequests();
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_UNAVAILABLE', 'within the Retry-After: not asked');
    t.equal(tokenRequests(), asked, 'the endpoint was not asked within its Retry-After');
    t.equal(await codeOf(tokens.current(Date.now() + 2_500)), 'granted', 'after it, asked again and granted');
  });

  await t.test('an outage: nothing listening is retried at the next ask, not parked', async (t) => {
    const cfg = imapConfig('good');
    const tokens = new AccessTokens(db, cfg);
    answerFirst = (res) => res.socket?.destroy();
    t.equal(await codeOf(tokens.current()), 'E_OAUTH_UNAVAILABLE', 'a reset connection is an outage');
    answerFirst = null;
    t.equal(await codeOf(tokens.current()), 'granted', 'the next ask reaches the endpoint and is granted');
  });

  t.same(
    provider.errors().filter((e) => !/^grant\.error: invalid_grant|invalid_client/.test(e)),
    [],
    'the provider raised nothing but the refusals',
  );
});
