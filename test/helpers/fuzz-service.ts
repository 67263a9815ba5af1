/**
 * The service a fuzz family of the HTTP surfaces is run against: started
 * for real in process, mirroring two accounts of a private Dovecot (one
 * message with an attachment in each), with `/mcp` and the admin API each
 * behind an API key that holds every permission, attachment links under
 * `Deployment:PublicBaseAddress`, limits raised so the limiter never
 * answers for the input, and small `Connections` bounds so a request that
 * lies about its length is cut off within seconds.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { newKeyRing } from '../../runtime/keyring/keyring.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { appendMessages } from '../harness/place-mail.ts';
import { tempDir } from './daemon.ts';
import { reservePort } from './ports.ts';
import { startSyncService, type SyncService } from './sync-service.ts';

export type FuzzService = {
  sync: SyncService;
  mcpPort: number;
  adminPort: number;
  /** The API key of `/mcp` and of the admin API (one secret each). */
  mcpKey: string;
  adminKey: string;
  dir: string;
  keyRingFile: string;
};

/** `ReceiveTimeout` of both listeners: a request that never finishes is answered 408 this long after it began. */
export const FUZZ_RECEIVE_TIMEOUT_MS = 2_000;

const LIMITS = { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000, MaxConcurrentRequests: 200, ConcurrencyQueueLimit: 1_000 };
const CONNECTIONS = { HeadersTimeout: '00:00:01', ReceiveTimeout: '00:00:02', IdleTimeout: '00:00:01' };

function messageWithAttachment(owner: string): string {
  const boundary = `b-${randomUUID()}`;
  return [
    `From: Sender <sender@example.org>`,
    `To: ${owner} <${owner}@example.org>`,
    `Subject: report for ${owner}`,
    `Message-ID: <${randomUUID()}@example.org>`,
    'Date: Mon, 02 Jun 2025 10:00:00 +0000',
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See the attachment.',
    `--${boundary}`,
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from(`%PDF-1.4 report of ${owner} `.repeat(40)).toString('base64'),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

export async function startFuzzService(t: Test): Promise<FuzzService> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({
    users: [
      { user: 'rita', password: 'pw-rita' },
      { user: 'sam', password: 'pw-sam' },
    ],
  });
  t.teardown(() => dovecot.stop());
  for (const user of ['rita', 'sam']) await appendMessages(dovecot, user, 'INBOX', [{ raw: messageWithAttachment(user) }]);
  const mcpKey = `mc_${randomUUID().replaceAll('-', '')}`;
  const adminKey = `mc_${randomUUID().replaceAll('-', '')}`;
  writeFileSync(join(dir, 'mcp.key'), mcpKey, { mode: 0o600 });
  writeFileSync(join(dir, 'admin.key'), adminKey, { mode: 0o600 });
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const mcpPort = await reservePort();
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      { id: 'rita', user: 'rita', folders: [{ Alias: 'inbox' }] },
      { id: 'sam', user: 'sam', folders: [{ Alias: 'inbox' }] },
    ],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: mcpPort,
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'mcp.key')}`, Lifetime: 'NoLimit' } }],
        RateLimiting: LIMITS,
        Connections: CONNECTIONS,
      },
      AdminEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'operator', SecretReference: `file:${join(dir, 'admin.key')}`, Lifetime: 'NoLimit' } }],
        RateLimiting: LIMITS,
        Connections: CONNECTIONS,
      },
      Deployment: { PublicBaseAddress: `http://127.0.0.1:${mcpPort}` },
      DataEncryption: { KeyRing: `file:${keyRingFile}` },
      MailSynchronization: { Enabled: true, Interval: '01:00:00' },
    },
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('rita', 60_000);
  await sync.syncNow('sam', 60_000);
  return { sync, mcpPort, adminPort: sync.service.admin!.port, mcpKey, adminKey, dir, keyRingFile };
}

/** Runs `work` over `items` with at most `width` at once, in order of start. */
export async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}
