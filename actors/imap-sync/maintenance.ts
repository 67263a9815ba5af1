/**
 * The account's maintenance operations (docs/admin-api.md "Rewind",
 * "Re-derivation", "Folder erasure"), handled by the sync actor because it is
 * the sole writer of the account's mail tables:
 * - rewind: discard folder progress (one checkpoint row per binding); a run
 *   under way has its next advance refused (concurrency conflict);
 * - erasure: one bounded pass over a folder the account no longer mirrors;
 * - re-derivation: re-read stored raw MIME into the derived columns in
 *   bounded segments, never touching the server. The run is durable and
 *   carried by a job (rederivation-carriage.ts);
 * - an operator's decision on a dead-lettered job (retry or drop): a
 *   mailbox change (change-journal.ts) or a re-derivation run.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { erasePass, rederivationRecord, rewind, rewindAssessment } from '../../runtime/store/mailbox/maintenance.ts';
import type { Database } from '../../runtime/store/open.ts';
import { decideChange, type Journal } from './change-journal.ts';
import type { ImapSyncConfig, SyncMessage } from './protocol.ts';
import { decideJob, requestRun, type Carriage } from './rederivation-carriage.ts';

type MaintenanceState = { db: Database; config: ImapSyncConfig; carriage: Carriage; journal: Journal };
type MaintenanceType =
  | 'imap-sync.rewind'
  | 'imap-sync.rewind-assessment'
  | 'imap-sync.erase-pass'
  | 'imap-sync.rederive'
  | 'imap-sync.rederivation'
  | 'imap-sync.job-decision';
type Maintenance = Extract<SyncMessage, { type: MaintenanceType }>;

const MAINTENANCE: readonly string[] = [
  'imap-sync.rewind',
  'imap-sync.rewind-assessment',
  'imap-sync.erase-pass',
  'imap-sync.rederive',
  'imap-sync.rederivation',
  'imap-sync.job-decision',
] satisfies MaintenanceType[];

export function isMaintenance(msg: { type: string }): msg is Maintenance {
  return MAINTENANCE.includes(msg.type);
}

export function handleMaintenance(state: MaintenanceState, ctx: ActorContext, msg: Maintenance): unknown {
  const { db, config } = state;
  const now = Date.now();
  switch (msg.type) {
    case 'imap-sync.rewind-assessment':
      return rewindAssessment(db, config.account, msg.folder);
    case 'imap-sync.rewind':
      return rewind(db, config.account, msg.folder, now);
    case 'imap-sync.erase-pass':
      return erasePass(db, config.account, msg.folder, msg.limit, now);
    case 'imap-sync.rederivation': {
      // The admin GET answers the run's carriage too; a scope never asked about has neither.
      const record = rederivationRecord(db, config.account, msg.folder);
      return record === null ? { run: null } : { carriage: record.carriage, run: record.run };
    }
    case 'imap-sync.rederive':
      return requestRun(state, ctx, msg.folder);
    case 'imap-sync.job-decision':
      // A change of the journal, else a re-derivation job (which answers JobUnknown for anything else).
      return decideChange(state, ctx, msg.job, msg.decision) ?? decideJob(state, ctx, msg.job, msg.decision);
  }
}
