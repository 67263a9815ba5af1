/**
 * XOAUTH2 login end to end with real parts: an `oidc-provider` authorization server
 * (test/harness/oauth-provider.ts) issues the refresh token through a completed
 * authorization-code flow; a real `mailcairnd` process redeems it at the provider's token
 * endpoint; the private Dovecot checks the access token by RFC 7662 introspection at the same
 * provider (an oauth2 passdb) and serves the mail. Checked: the mail arrives in the mirror; a
 * rotated refresh token is sealed and stored in place of the old one (and kept when the provider
 * does not rotate); a revoked or unknown refresh token, and an access token Dovecot refuses, end
 * the run as an authentication failure without bringing anything else down; no line the process
 * writes — main thread and actor threads, stdout and stderr — carries a token or the client secret.
 *
 * The service runs as a child process (test/helpers/oauth-service.ts says why).
 */
import t from 'tap';
import { syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startOAuthProvider } from '../../harness/oauth-provider.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { until } from '../../helpers/log-capture.ts';
import { readMirror } from '../../helpers/mirror.ts';
import { assertNoSecrets, type LogLine, startOAuthService } from '../../helpers/oauth-service.ts';

// Real servers and a whole mirror: generous on a loaded machine (CI shares two cores).
t.setTimeout(300_000);

function message(i: number): string {
  return [
    `From: Sender ${i} <sender${i}@example.org>`,
    'To: Alice <alice@example.org>',
    `Subject: OAuth subject number ${i}`,
    `Message-ID: <oauth${i}@example.org>`,
    'Date: Mon, 2 Nov 2026 10:00:00 +0000',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Body of message ${i}.`,
    '',
  ].join('\r\n');
}

function events(lines: LogLine[], event: string, account: string): LogLine[] {
  return lines.filter((l) => l.event === event && l.actor === syncActorId(account));
}

t.test('XOAUTH2 against oidc-provider and a Dovecot oauth2 passdb', async (t) => {
  const provider = await startOAuthProvider({ users: ['alice', 'bob', 'carol', 'dave'], rotateRefreshTokens: true });
  t.teardown(() => provider.stop());
  const dovecot = await startDovecot({
    users: ['alice', 'bob', 'carol', 'dave'].map((user) => ({ user, password: `unused-password-${user}` })),
    oauth2: { introspectionUrl: provider.introspectionUrl },
  });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await appendMessages(
    dovecot,
    'alice',
    'INBOX',
    Array.from({ length: 30 }, (_, i) => ({ raw: message(i), flags: i % 4 === 0 ? ['\\Seen'] : [] })),
  );
  await appendMessages(
    dovecot,
    'bob',
    'INBOX',
    Array.from({ length: 3 }, (_, i) => ({ raw: message(100 + i) })),
  );
  await appendMessages(dovecot, 'dave', 'INBOX', [{ raw: message(200) }]);

  await t.test('the mail arrives, and the rotated refresh token replaces the stored one', async (t) => {
    provider.setRotation(true);
    const minted = await provider.mintRefreshToken('alice');
    t.equal((await provider.introspect(minted)).active, true, 'the provider issued a live refresh token');
    const sync = await startOAuthService(t, dovecot, provider, [{ id: 'alice', user: 'alice', refreshToken: minted }]);
    const before = sync.storedToken('alice');
    t.equal(before?.token, minted, 'the refresh token is stored sealed');
    t.notOk(before?.sealed.includes(minted), 'the stored value does not show the token');

    t.equal((await sync.firstRun('alice')).outcome, 'ok', 'the run logged in and ended well');
    const server = (await admin.fetchAll('alice', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.equal(server.length, 30);
    t.same(readMirror(sync.database, 'alice', 'inbox'), server, 'the mirror equals the server');
    t.match(dovecot.log(), /imap-login: Info: Login: user=<alice>, method=XOAUTH2/, 'Dovecot logged alice in with XOAUTH2');

    const after = sync.storedToken('alice');
    t.not(after?.sealed, before?.sealed, 'the sealed value changed');
    t.not(after?.token, minted, 'the stored token is the rotated one');
    t.equal((await provider.introspect(after!.token)).active, true, 'the stored token is live at the provider');
    t.equal((await provider.introspect(minted)).active, false, 'the first token was consumed by the rotation');
    t.ok((provider.tokenRequests().refresh_token ?? 0) >= 1, 'the token endpoint redeemed a refresh token');
    t.same(provider.errors(), [], 'the provider raised no error');
    t.equal(await sync.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(t, sync.output(), provider, [minted, after!.token]);
  });

  await t.test('a provider that does not rotate: the stored token stays as it was', async (t) => {
    provider.setRotation(false);
    t.teardown(() => provider.setRotation(true));
    const minted = await provider.mintRefreshToken('bob');
    const redeemed = provider.tokenRequests().refresh_token ?? 0;
    const sync = await startOAuthService(t, dovecot, provider, [{ id: 'bob', user: 'bob', refreshToken: minted }]);
    const before = sync.storedToken('bob');
    t.equal((await sync.firstRun('bob')).outcome, 'ok');
    t.equal(readMirror(sync.database, 'bob', 'inbox').length, 3, 'bob’s mail arrived');
    t.equal(provider.tokenRequests().refresh_token, redeemed + 1, 'the refresh token was redeemed once');
    t.same(sync.storedToken('bob'), before, 'the row was not rewritten');
    t.equal((await provider.introspect(minted)).active, true, 'the token is still live');
    t.equal(await sync.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(t, sync.output(), provider, [minted]);
  });

  await t.test('a revoked or unknown refresh token fails the run as refused, and nothing else goes down', async (t) => {
    const revoked = await provider.mintRefreshToken('bob');
    await provider.revoke(revoked);
    t.equal((await provider.introspect(revoked)).active, false, 'the provider no longer honours the token');
    const unknown = 'not-a-refresh-token-the-provider-ever-issued';
    const good = await provider.mintRefreshToken('alice');
    const logFrom = dovecot.log().length;
    const sync = await startOAuthService(t, dovecot, provider, [
      { id: 'revoked', user: 'bob', refreshToken: revoked },
      { id: 'unknown', user: 'carol', refreshToken: unknown },
      { id: 'healthy', user: 'alice', refreshToken: good },
    ]);
    for (const id of ['revoked', 'unknown']) {
      const run = await sync.firstRun(id);
      t.same(run, { outcome: 'failed', consecutive_failures: 1 }, `${id}: the run is recorded as failed`);
      t.same(readMirror(sync.database, id, 'inbox'), [], `${id}: nothing mirrored`);
      await until(() => events(sync.lines(), 'sync.run-failed', id).length > 0, 10_000, `${id}: sync.run-failed`);
      t.same(
        events(sync.lines(), 'sync.run-failed', id).map((l) => l.reason),
        ['E_OAUTH_REFRESH_REFUSED'],
        `${id}: the cause is the refused refresh token`,
      );
      // No login was tried, so no lockout risk: the actor stays up to store the token an operator places next.
      t.same(events(sync.lines(), 'actor.exit', id), [], `${id}: the actor neither stopped nor crashed`);
      t.equal(sync.storedToken(id)?.token, id === 'revoked' ? revoked : unknown, `${id}: the stored token is left for an operator to replace`);
    }
    t.notMatch(dovecot.log().slice(logFrom), /user=<(bob|carol)>/, 'no login was attempted without an access token');
    t.equal((await sync.firstRun('healthy')).outcome, 'ok', 'the other account synchronized');
    t.equal(readMirror(sync.database, 'healthy', 'inbox').length, 30);
    t.same(
      provider.errors().filter((e) => !/^grant\.error: invalid_grant/.test(e)),
      [],
      'the provider only refused the two grants',
    );
    t.equal(await sync.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(t, sync.output(), provider, [revoked, good, unknown]);
  });

  await t.test('an access token Dovecot refuses is a refused login (E_IMAP_AUTH)', async (t) => {
    // A live token, but for another subject: the provider redeems it, Dovecot's introspection names bob, not dave.
    const minted = await provider.mintRefreshToken('bob');
    const logFrom = dovecot.log().length;
    const sync = await startOAuthService(t, dovecot, provider, [{ id: 'dave', user: 'dave', refreshToken: minted }]);
    t.same(await sync.firstRun('dave'), { outcome: 'failed', consecutive_failures: 1 }, 'the run is recorded as failed');
    await until(() => events(sync.lines(), 'actor.exit', 'dave').length > 0, 10_000, 'actor.exit');
    t.same(
      events(sync.lines(), 'sync.run-failed', 'dave').map((l) => l.reason),
      ['E_IMAP_AUTH'],
      'the cause is the refused login',
    );
    t.same(
      events(sync.lines(), 'actor.exit', 'dave').map((l) => l.reason),
      ['E_IMAP_AUTH'],
      'the actor stopped for it',
    );
    t.match(dovecot.log().slice(logFrom), /auth failed, 1 attempts[^\n]*user=<dave>, method=XOAUTH2/, 'Dovecot refused dave’s XOAUTH2 login');
    t.same(readMirror(sync.database, 'dave', 'inbox'), [], 'nothing mirrored');
    t.equal(await sync.stop(), 0, 'mailcairnd stopped cleanly');
    assertNoSecrets(t, sync.output(), provider, [minted]);
  });
});
