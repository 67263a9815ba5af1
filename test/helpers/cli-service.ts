/**
 * A Mailcairn service started for real in-process for the operator client's
 * tests (test/cli/harness.ts) and the `cli` benchmark: optionally mirroring a
 * private Dovecot, optionally reporting another version, with its
 * administrative credentials (API keys of three permission sets and a key
 * pair) and every secret a test must never see in an output.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdminPermissions } from '../../config/permissions.ts';
import { startService, type Service } from '../../service/app.ts';
import { newKeyRing } from '../../runtime/keyring/keyring.ts';
import type { ImapPeer } from '../harness/imap-client.ts';
import { tempDir, writeConfig } from './daemon.ts';
import { reservePort } from './ports.ts';
import { captureLog } from './log-capture.ts';

type Teardown = { teardown(fn: () => unknown): void };

/** Every administrative permission, in the order the configuration lists them (the `operator` key holds them all). */
export const ALL_PERMISSIONS: string[] = [...AdminPermissions];

export type CliService = {
  service: Service;
  dir: string;
  /** `http://127.0.0.1:<port>` of the administrative listener. */
  admin: string;
  mcp: string;
  logs: ReturnType<typeof captureLog>;
  /** API keys by entry name: `operator` (everything), `reader` (read only), `nothing` ([]). */
  keys: { operator: string; reader: string; nothing: string };
  /** PEM private key whose public half is the `signer` entry (everything), written at `privateKeyPath`. */
  privateKeyPath: string;
  /** Every secret a test must never see in an output. */
  secrets: string[];
};

export type CliServiceOptions = {
  /** The version the service reports instead of the build's. */
  version?: string;
  dovecot?: ImapPeer;
  accounts?: Array<{ id: string; user: string; folders: Array<{ Alias: string; Path?: string }> }>;
  /** Reuse a directory (and so the database) of an earlier service: a restart with another mapping. */
  dir?: string;
  /** Synchronization on (default off: tests ask for runs). */
  synchronization?: boolean;
  /** The API keys to configure (another service accepting the same credentials). */
  keys?: CliService['keys'];
  /** More top-level sections of the configuration (`Embeddings`, `EmbeddingBackfill`, `ReverseProxy`). */
  sections?: Record<string, unknown>;
  /** More entries of `AdminEndpoint:Authentication` (an `OAuth` entry: test/cli/oauth-harness.ts). */
  adminEntries?: unknown[];
};

export async function startCliService(t: Teardown, options: CliServiceOptions = {}): Promise<CliService> {
  const dir = options.dir ?? tempDir(t);
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const keys = options.keys ?? {
    operator: `mc_${randomUUID().replaceAll('-', '')}`,
    reader: `mc_${randomUUID().replaceAll('-', '')}`,
    nothing: `mc_${randomUUID().replaceAll('-', '')}`,
  };
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const privateKeyPath = join(dir, 'client-private.pem');
  writeFileSync(privateKeyPath, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const dovecot = options.dovecot;
  // Without a Dovecot an account points at a closed port (reserved, so nothing of this run listens there): enough for routes that never reach the mail server.
  const closedPort = dovecot ? 0 : await reservePort();
  const accounts = (options.accounts ?? []).map((a) => {
    const passwordFile = join(dir, `${a.id}.password`);
    writeFileSync(passwordFile, dovecot ? dovecot.users.find((u) => u.user === a.user)!.password : 'unused');
    return {
      Id: a.id,
      Imap: { Host: '127.0.0.1', Port: dovecot?.port ?? closedPort, Security: 'None', Username: a.user, Password: `file:${passwordFile}` },
      Folders: a.folders,
    };
  });
  const config = {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: join(dir, 'mailcairn.db') },
    MailSynchronization: { Interval: '00:10:00', BatchSize: 200, Enabled: options.synchronization ?? false },
    DataEncryption: { KeyRing: `file:${keyRingFile}` },
    Accounts: accounts,
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'operator', SecretReference: file('operator.key', keys.operator), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reader', SecretReference: file('reader.key', keys.reader), Lifetime: 'NoLimit' }, Permissions: ['service.admin.read'] },
        { ApiKey: { Name: 'nothing', SecretReference: file('nothing.key', keys.nothing), Lifetime: 'NoLimit' }, Permissions: [] },
        {
          PublicKey: {
            Name: 'signer',
            SecretReference: file('client-public.pem', pair.publicKey.export({ type: 'spki', format: 'pem' }) as string),
            Lifetime: 'NoLimit',
          },
        },
        ...(options.adminEntries ?? []),
      ],
      RateLimiting: { TokenCapacity: 1000, TokensPerReplenishmentPeriod: 1000, ReplenishmentPeriod: '00:01:00' },
    },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'agent', SecretReference: file('agent.key', `mc_${randomUUID()}`), Lifetime: 'NoLimit' } }],
    },
    ...options.sections,
  };
  const logs = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, config),
    env: {},
    log: logs.log,
    hostLogSink: logs.write,
    ...(options.version ? { version: options.version } : {}),
  });
  t.teardown(() => service.stop());
  return {
    service,
    dir,
    admin: `http://127.0.0.1:${service.admin!.port}`,
    mcp: `http://127.0.0.1:${service.mcp!.port}`,
    logs,
    keys,
    privateKeyPath,
    secrets: [...Object.values(keys)],
  };
}
