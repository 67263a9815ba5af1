/**
 * SMTP XOAUTH2 end to end with real parts: an `oidc-provider` authorization server issues the
 * account's refresh token through a completed authorization-code flow; a real `mailcairnd`
 * process logs in to a private Dovecot with it (Dovecot checks the access tokens by introspection)
 * and, the account's `Smtp` section naming the same `OAuth` block, sends through a real SMTP
 * server (smtp-server, STARTTLS, the sink's certificate trusted by reference) whose XOAUTH2
 * verifier introspects each token it is shown at the same provider, as a resource server does,
 * and accepts only a token that is active there for the user logging in.
 *
 * Checked: a send made through MCP (`send_email`) is delivered once, logged in as the account's
 * user with a token active at the provider, the one the IMAP login redeemed (one redemption serves
 * both); a token the SMTP server refuses (though still active at the provider) fails the attempt
 * as `login-refused`, and the next attempt is made with a freshly redeemed token (the outbox asks
 * its sync actor for a `fresh` one) and delivered once; no line the process writes — main thread
 * and actor threads, stdout and stderr — carries an access token, a refresh token, an XOAUTH2
 * payload or the client secret.
 *
 * The refused token is refused by the SMTP server itself rather than revoked at the provider:
 * oidc-provider revokes an access token's whole grant with it (the refresh token too), after which
 * no fresh token can be had.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { mailAdmin } from '../../harness/doveadm.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { type OAuthProvider, startOAuthProvider } from '../../harness/oauth-provider.ts';
import { startSmtpServer } from '../../harness/smtp-server.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { assertNoSecrets, type OAuthService, startOAuthService } from '../../helpers/oauth-service.ts';
import { call, settled, sleep } from './outbox-setup.ts';

// Real servers, a child process, one retry delay: generous on a loaded machine (CI shares two cores).
t.setTimeout(240_000);

const AGENT_KEY = 'key-agent-xoauth2-0123456789abcdef';
const USERS = ['alice', 'bob'];
const senderOf = (user: string): string => `${user}@example.org`;

/** What the SMTP server's verifier was shown, what the provider said of it, and whether the server let it in. */
type Sighting = { user: string; token: string; active: boolean; sub: unknown; clientId: unknown; accepted: boolean };

/**
 * RFC 7662 introspection as a resource server does it: at the provider's introspection endpoint,
 * with the credentials the harness hands Dovecot (the userinfo of `introspectionUrl`) as HTTP Basic.
 */
async function introspect(provider: OAuthProvider, token: string): Promise<Record<string, unknown>> {
  const url = new URL(provider.introspectionUrl);
  const basic = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
  url.username = '';
  url.password = '';
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` },
    body: new URLSearchParams({ token }).toString(),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`introspection answered HTTP ${res.statusCode}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** The XOAUTH2 initial response nodemailer sends for `user` and `token` (RFC 7628 shape), to look for in the output. */
const xoauth2Payload = (user: string, token: string): string => Buffer.from(`user=${user}\u0001auth=Bearer ${token}\u0001\u0001`).toString('base64');

t.test('SMTP XOAUTH2 against oidc-provider, a Dovecot oauth2 passdb and an introspecting SMTP server', async (t) => {
  const provider = await startOAuthProvider({ users: USERS, rotateRefreshTokens: true });
  t.teardown(() => provider.stop());
  const dovecot = await startDovecot({
    users: USERS.map((user) => ({ user, password: `unused-password-${user}` })),
    oauth2: { introspectionUrl: provider.introspectionUrl },
  });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  for (const user of USERS) await admin.createMailbox(user, 'Sent');

  const seen: Sighting[] = [];
  // Set by a test: the next token shown is refused from then on, whatever the provider says of it.
  let refuseNextToken = false;
  const refusedTokens = new Set<string>();
  const sink = await startSmtpServer({
    security: 'StartTls',
    xoauth2: async (user, token) => {
      if (refuseNextToken) {
        refuseNextToken = false;
        refusedTokens.add(token);
      }
      const answer = await introspect(provider, token);
      const active = answer.active === true;
      const accepted = active && answer.sub === user && answer.client_id === provider.client.id && !refusedTokens.has(token);
      seen.push({ user, token, active, sub: answer.sub, clientId: answer.client_id, accepted });
      return accepted;
    },
  });
  t.teardown(() => sink.stop());

  /** A service sending as `user` through the sink, its MCP client, and what the provider had issued before it started. */
  const start = async (t: Test, user: string): Promise<{ service: OAuthService; agent: Client; minted: string; issuedBefore: Set<string> }> => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'agent.key'), AGENT_KEY, { mode: 0o600 });
    const minted = await provider.mintRefreshToken(user);
    const issuedBefore = new Set(provider.issued().accessTokens);
    const service = await startOAuthService(
      t,
      dovecot,
      provider,
      [
        {
          id: user,
          user,
          refreshToken: minted,
          folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Sent' }],
          // The IMAP login's OAuth block (same TokenEndpoint, ClientId, secret): one refresh token serves both.
          smtp: {
            Host: sink.host,
            Port: sink.port,
            Security: 'StartTls',
            Username: user,
            From: senderOf(user),
            TrustedCertificate: `file:${sink.certificateFile}`,
          },
        },
      ],
      {
        McpEndpoint: {
          Enabled: true,
          BindAddress: '127.0.0.1',
          Port: 0,
          Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }],
          RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
        },
        Outbox: { RetryDelay: '00:00:01', SendTimeout: '00:00:10' },
      },
    );
    const port = await service.listenerPort('McpEndpoint');
    const agent = new Client({ name: 'outbox-xoauth2-test', version: '1.0.0' });
    await agent.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { authorization: `Bearer ${AGENT_KEY}` } } }),
    );
    t.teardown(() => agent.close().catch(() => undefined));
    return { service, agent, minted, issuedBefore };
  };

  const attempts = (service: OAuthService): unknown[][] =>
    service
      .lines()
      .filter((l) => l.event === 'outbox.attempt')
      .map((l) => [l.ending, l.code, l.stage]);

  await t.test('a send logs in with the access token the IMAP login redeemed and is delivered once', async (t) => {
    const { service, agent, minted, issuedBefore } = await start(t, 'alice');
    t.equal((await service.firstRun('alice')).outcome, 'ok', 'the IMAP login (XOAUTH2) worked and the run ended well');
    const redeemedAtBoot = provider.tokenRequests().refresh_token ?? 0;
    const seenFrom = seen.length;
    const deliveredFrom = sink.deliveries.length;

    const sent = await call(agent, 'send_email', {
      account: 'alice',
      to: ['oauth.recipient@example.net'],
      subject: 'Sent with an access token',
      plainTextBody: 'Delivered over SMTP with XOAUTH2.',
      idempotencyKey: 'xoauth2-first',
    });
    t.ok(sent.ok, sent.text);
    const done = await settled(agent, sent.value.outgoingEmailId, ['sent', 'refused'], 30_000);
    t.match(done, { state: 'sent', attemptCount: 1, failureCode: null }, 'sent at the first attempt');
    t.same(attempts(service), [['answered', null, 'Sent']], 'one attempt, answered');

    await sink.waitForDeliveries(deliveredFrom + 1, 10_000);
    await sleep(500);
    const deliveries = sink.deliveries.slice(deliveredFrom);
    t.equal(deliveries.length, 1, 'delivered once');
    t.equal(deliveries[0]!.authenticatedUser, 'alice', "logged in as the account's user");
    t.equal(deliveries[0]!.envelopeFrom, senderOf('alice'), 'the envelope sender is Smtp:From');
    t.same(deliveries[0]!.recipients, ['oauth.recipient@example.net']);

    const sightings = seen.slice(seenFrom);
    t.equal(sightings.length, 1, 'one XOAUTH2 login');
    t.match(
      sightings[0],
      { user: 'alice', active: true, sub: 'alice', clientId: provider.client.id, accepted: true },
      'the token was active at the provider, for alice',
    );
    const redeemed = provider.issued().accessTokens.filter((v) => !issuedBefore.has(v));
    t.same(redeemed, [sightings[0]!.token], 'the token presented is the one the service redeemed (for the IMAP login)');
    t.equal(provider.tokenRequests().refresh_token ?? 0, redeemedAtBoot, 'sending redeemed nothing more: one access token serves IMAP and SMTP');

    const deadline = Date.now() + 20_000;
    while ((await admin.status('alice', 'Sent')).messages === 0 && Date.now() < deadline) await sleep(100);
    t.equal((await admin.status('alice', 'Sent')).messages, 1, 'the sent copy was filed (the journal logs in with the same token)');
    t.equal(await service.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(
      t,
      service.output(),
      provider,
      [minted, service.storedToken('alice')!.token],
      [['an XOAUTH2 payload', xoauth2Payload('alice', sightings[0]!.token)]],
    );
  });

  await t.test('a refused token: the next attempt asks for a fresh one and is delivered once', async (t) => {
    const { service, agent, minted, issuedBefore } = await start(t, 'bob');
    t.equal((await service.firstRun('bob')).outcome, 'ok', 'the IMAP login (XOAUTH2) worked and the run ended well');
    const held = provider.issued().accessTokens.filter((v) => !issuedBefore.has(v));
    t.equal(held.length, 1, 'the service holds one access token');
    refuseNextToken = true;
    t.teardown(() => {
      refuseNextToken = false;
    });
    const redeemedBefore = provider.tokenRequests().refresh_token ?? 0;
    const seenFrom = seen.length;
    const deliveredFrom = sink.deliveries.length;

    const sent = await call(agent, 'send_email', {
      account: 'bob',
      to: ['oauth.retry@example.net'],
      subject: 'Sent after a refused token',
      plainTextBody: 'Delivered at the second attempt.',
      idempotencyKey: 'xoauth2-refused',
    });
    t.ok(sent.ok, sent.text);
    const done = await settled(agent, sent.value.outgoingEmailId, ['sent', 'refused'], 30_000);
    t.match(done, { state: 'sent', attemptCount: 2 }, 'sent at the second attempt');
    const got = await call(agent, 'get_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId });
    t.match(got.value, { state: 'sent', attemptCount: 2 }, 'get_outgoing_email shows two attempts');
    t.same(
      attempts(service),
      [
        ['not-begun', 'login-refused', 'Recorded'],
        ['answered', null, 'Sent'],
      ],
      'the first attempt ended with the login refused, the second was answered',
    );

    await sink.waitForDeliveries(deliveredFrom + 1, 10_000);
    await sleep(500);
    const deliveries = sink.deliveries.slice(deliveredFrom);
    t.equal(deliveries.length, 1, 'delivered once');
    t.equal(deliveries[0]!.authenticatedUser, 'bob', "logged in as the account's user");

    const sightings = seen.slice(seenFrom);
    const refused = sightings.filter((s) => !s.accepted);
    const accepted = sightings.filter((s) => s.accepted);
    t.ok(refused.length >= 1, 'a login was refused');
    t.ok(
      refused.every((s) => s.token === held[0] && s.user === 'bob'),
      'every refused login presented the token the service held',
    );
    t.equal(accepted.length, 1, 'one login was accepted');
    t.match(accepted[0], { user: 'bob', active: true, sub: 'bob', clientId: provider.client.id }, 'with a token active at the provider, for bob');
    t.not(accepted[0]!.token, held[0], 'a token other than the refused one');
    t.equal(sightings.at(-1), accepted[0], 'the accepted login came after the refused ones');
    t.equal(provider.tokenRequests().refresh_token ?? 0, redeemedBefore + 1, 'the retry redeemed the refresh token afresh, once');
    t.ok(provider.issued().accessTokens.includes(accepted[0]!.token), 'the new token is one the provider issued');

    t.equal(await service.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(
      t,
      service.output(),
      provider,
      [minted, service.storedToken('bob')!.token],
      sightings.map((s): [string, string] => ['an XOAUTH2 payload', xoauth2Payload(s.user, s.token)]),
    );
  });
});
