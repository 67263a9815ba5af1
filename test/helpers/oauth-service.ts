/**
 * A real `mailcairnd` process whose accounts log in with OAuth (XOAUTH2), against an
 * `oidc-provider` (test/harness/oauth-provider.ts) and a Dovecot that introspects the access
 * tokens it receives; and the check that nothing the process wrote carries a token or a secret.
 * Shared by the IMAP XOAUTH2 test (test/actors/imap-sync/xoauth2.test.ts) and the SMTP one
 * (test/actors/outbox/outbox-xoauth2.test.ts).
 *
 * The service runs as a child process rather than in-process: the sync actors log from their own
 * threads straight to file descriptor 1, where an in-process capture never sees them, and they
 * are where tokens are handled.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import type { Test } from 'tap';
import { storeRefreshToken } from '../../actors/imap-sync/oauth-token.ts';
import { ImapSyncConfig, syncActorId } from '../../actors/imap-sync/protocol.ts';
import { loadConfig } from '../../config/load.ts';
import { storeSlice } from '../../config/store-slice.ts';
import { newKeyRing, unseal } from '../../runtime/keyring/keyring.ts';
import { loadKeyRing } from '../../runtime/keyring/load.ts';
import { readSecret } from '../../runtime/secret-ref.ts';
import { reconcileAccounts } from '../../runtime/store/accounts.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { systemChildren } from '../../service/system-children.ts';
import type { Dovecot } from '../harness/dovecot.ts';
import type { OAuthProvider } from '../harness/oauth-provider.ts';
import { listenerPort, spawnDaemon, tempDir, writeConfig } from './daemon.ts';
import { until } from './log-capture.ts';

export type OAuthAccount = {
  id: string;
  /** The IMAP login (a subject the provider knows). */
  user: string;
  refreshToken: string;
  /** Default: the inbox only. */
  folders?: Array<{ Alias: string; Path?: string }>;
  /**
   * The account's `Smtp` section, as written, except that it logs in with the IMAP login's
   * `OAuth` block (same endpoint, client and secret) unless it names an `OAuth` of its own.
   */
  smtp?: Record<string, unknown>;
};
export type RunRow = { outcome: string; consecutive_failures: number };
export type LogLine = Record<string, unknown>;

export type OAuthService = {
  database: string;
  /** The account's first run (it starts by itself at boot), once it has ended. */
  firstRun(account: string, timeoutMs?: number): Promise<RunRow>;
  /** The sealed refresh token as stored, and what it opens to. */
  storedToken(account: string): { sealed: string; token: string } | null;
  /** The port a listener of the process bound (configured with `Port: 0`), from its `listener.open` line. */
  listenerPort(section: string): Promise<number>;
  /** Every JSON line the process wrote so far (both threads' loggers write to stdout). */
  lines(): LogLine[];
  /** All the process wrote, stdout and stderr. */
  output(): string;
  /** SIGTERM, and the exit code. */
  stop(): Promise<number | null>;
};

/**
 * A `mailcairnd` whose accounts log in with OAuth. The refresh tokens are stored sealed in the
 * database before it starts, the way the service stores them (the actor's own configuration as the
 * supervisor builds it: same key ring, same row), so the first run finds them. `extra`: further
 * configuration sections (an `McpEndpoint`, `Outbox`…), written beside the ones made here.
 */
export async function startOAuthService(
  t: Test,
  dovecot: Dovecot,
  provider: OAuthProvider,
  accounts: OAuthAccount[],
  extra: Record<string, unknown> = {},
): Promise<OAuthService> {
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const secretFile = join(dir, 'client-secret');
  writeFileSync(secretFile, provider.client.secret, { mode: 0o600 });
  const oauth = { TokenEndpoint: provider.tokenEndpoint, ClientId: provider.client.id, ClientSecret: `file:${secretFile}`, Scopes: provider.scopes };
  const configFile = writeConfig(dir, {
    ...extra,
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    DataEncryption: { KeyRing: `file:${keyRingFile}` },
    Logging: { Level: 'debug', Format: 'Json' },
    MailSynchronization: { Interval: '00:10:00', BatchSize: 50, ConnectTimeout: '00:00:10', CommandTimeout: '00:00:20' },
    Accounts: accounts.map((a) => ({
      Id: a.id,
      Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: a.user, OAuth: oauth },
      ...(a.smtp ? { Smtp: { OAuth: oauth, ...a.smtp } } : {}),
      Folders: a.folders ?? [{ Alias: 'inbox' }],
    })),
  });

  const config = loadConfig({ file: configFile, env: {} });
  const children = systemChildren(config);
  const db = openSlice(storeSlice(config));
  try {
    migrate(db);
    reconcileAccounts(
      db,
      accounts.map((a) => a.id),
    );
    for (const a of accounts) {
      storeRefreshToken(db, ImapSyncConfig.parse(children.find((c) => c.id === syncActorId(a.id))!.config), a.refreshToken, Date.now());
    }
  } finally {
    db.close();
  }

  const daemon = spawnDaemon(['--config', configFile]);
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  const read = <T>(sql: string, params: unknown[]): T | undefined => {
    const reader = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      return reader.prepare(sql).get(params) as T | undefined;
    } finally {
      reader.close();
    }
  };
  return {
    database,
    // Wide enough for a loaded machine (seen to take over 30 s at load average 20 on two cores).
    async firstRun(account, timeoutMs = 90_000) {
      let row: RunRow | undefined;
      let gone = false;
      void daemon.exited.then(() => (gone = true));
      await until(
        () => {
          if (gone) throw new Error(`mailcairnd exited: ${daemon.stderr()}`);
          const found = read<RunRow>('SELECT outcome, consecutive_failures FROM sync_runs WHERE account_id = ? AND ended_at IS NOT NULL ORDER BY id LIMIT 1', [
            account,
          ]);
          if (found) row = { outcome: found.outcome, consecutive_failures: Number(found.consecutive_failures) };
          return row !== undefined;
        },
        timeoutMs,
        `the first run of ${account}`,
      );
      return row!;
    },
    storedToken(account) {
      const row = read<{ sealed: string }>('SELECT sealed FROM mailbox_refresh_tokens WHERE account_id = ?', [account]);
      if (!row) return null;
      const ring = loadKeyRing(readSecret(`file:${keyRingFile}`, {}, 'DataEncryption:KeyRing'));
      return { sealed: row.sealed, token: unseal(ring, 'token-sealing', row.sealed, account).toString('utf8') };
    },
    listenerPort: (section) => listenerPort(daemon, section),
    lines: () => daemon.lines(),
    output: () => daemon.stdout() + daemon.stderr(),
    async stop() {
      daemon.child.kill('SIGTERM');
      return (await daemon.exited).code;
    },
  };
}

/**
 * Nothing the process wrote may carry a token the provider issued, a token we minted, a client
 * secret, or anything else named in `also` (what it is, the value).
 */
export function assertNoSecrets(t: Test, output: string, provider: OAuthProvider, minted: string[], also: Array<[string, string]> = []): void {
  const issued = provider.issued();
  t.ok(issued.accessTokens.length + minted.length > 0, 'there were tokens to look for');
  const secrets: Array<[string, string]> = [
    ...issued.accessTokens.map((v): [string, string] => ['an access token', v]),
    ...issued.refreshTokens.map((v): [string, string] => ['a refresh token', v]),
    ...minted.map((v): [string, string] => ['a stored refresh token', v]),
    ['the client secret', provider.client.secret],
    ['the resource server secret', provider.resourceServer.secret],
    ...also,
  ];
  t.same(
    secrets.filter(([, value]) => output.includes(value)).map(([what]) => what),
    [],
    'no line carries an access token, a refresh token or the client secret',
  );
  t.notMatch(output, /Bearer |access_token|refresh_token|client_secret|auth=/i, 'no line quotes a token request, a token answer or an XOAUTH2 payload');
}
