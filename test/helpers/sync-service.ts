/** A Mailcairn service in-process, mirroring accounts of a private Dovecot, with helpers to drive and read synchronization. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startService, type Service } from '../../service/app.ts';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import type { SynchronizationStatus } from '../../runtime/store/mailbox/status.ts';
import type { ImapPeer } from '../harness/imap-client.ts';
import { captureLog, until } from './log-capture.ts';
import { writeConfig } from './daemon.ts';

export type SyncService = {
  service: Service;
  database: string;
  logs: ReturnType<typeof captureLog>;
  status(): Promise<SynchronizationStatus>;
  /** Ask for a run of `account` now and wait until a run that started after this call has ended. */
  syncNow(account: string, timeoutMs?: number): Promise<SynchronizationStatus>;
};

export type AccountSpec = {
  id: string;
  user: string;
  folders: Array<{ Alias: string; Path?: string }>;
  port?: number;
  security?: 'Tls' | 'StartTls' | 'None';
  host?: string;
  /** The account's `Smtp` section, as written. */
  smtp?: Record<string, unknown>;
};

export async function startSyncService(dir: string, dovecot: ImapPeer, accounts: AccountSpec[], extra: Record<string, unknown> = {}): Promise<SyncService> {
  const database = join(dir, 'mailcairn.db');
  const { MailSynchronization: _sync, ...sections } = extra;
  const config = {
    ...sections,
    HealthEndpoints: { Port: 0 },
    // Other Storage keys (BusyTimeout, …) may come with `extra`; the database is always this one.
    Storage: { ...((extra.Storage as object) ?? {}), Database: database },
    MailSynchronization: { Interval: '00:10:00', BatchSize: 50, ...((extra.MailSynchronization as object) ?? {}) },
    Accounts: accounts.map((a) => {
      const passwordFile = join(dir, `${a.id}.password`);
      writeFileSync(passwordFile, dovecot.users.find((u) => u.user === a.user)!.password);
      const caFile = join(dir, `${a.id}.ca.pem`);
      if (dovecot.certificate) writeFileSync(caFile, dovecot.certificate);
      return {
        Id: a.id,
        Imap: {
          Host: a.host ?? '127.0.0.1',
          Port: a.port ?? dovecot.port,
          Security: a.security ?? 'None',
          Username: a.user,
          Password: `file:${passwordFile}`,
          ...(dovecot.certificate ? { TrustedCertificate: `file:${caFile}` } : {}),
        },
        ...(a.smtp ? { Smtp: a.smtp } : {}),
        Folders: a.folders,
      };
    }),
  };
  const logs = captureLog();
  const service = await startService({ configFile: writeConfig(dir, config), env: {}, log: logs.log, hostLogSink: logs.write });
  const scheduler = service.supervisor.ref(SCHEDULER_ID);
  const status = (): Promise<SynchronizationStatus> => scheduler.ask({ type: 'sync-scheduler.status' });
  return {
    service,
    database,
    logs,
    status,
    async syncNow(account, timeoutMs = 60_000) {
      const since = Date.now();
      // The first run starts by itself; later ones are asked for the way IDLE asks.
      scheduler.tell({ type: 'sync-scheduler.wake', account });
      let last: SynchronizationStatus | null = null;
      await until(
        () => {
          status().then(
            (s) => (last = s),
            () => {},
          );
          const entry = last?.accounts.find((a) => a.account === account);
          return entry?.lastRun?.endedAt != null && Date.parse(entry.lastRun.endedAt) >= since && entry.phase !== 'running';
        },
        timeoutMs,
        `a run of ${account}`,
      );
      return last!;
    },
  };
}
