/**
 * The account's maintenance operations (admin-surface "Re-derivation and
 * rewind", "Folder erasure"), handled by the sync actor because it is the
 * sole writer of the account's mail tables:
 * - rewind: discard folder progress (one checkpoint row per binding); a run
 *   under way has its next advance refused (concurrency conflict);
 * - erasure: one bounded pass over a folder the account no longer mirrors;
 * - re-derivation: re-read stored raw MIME into the derived columns in
 *   bounded segments, never touching the server. The run is durable; the
 *   actor carries it forward one segment per private message.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import {
  advanceRederivation,
  applyDerivations,
  erasePass,
  rederivationRecordById,
  rederivationRun,
  rederivationSegment,
  requestRederivation,
  rewind,
  rewindAssessment,
} from '../../runtime/store/mailbox/maintenance.ts';
import { outstandingRederivations } from '../../runtime/store/mailbox/rederivation-runs.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { ParseReply } from '../mime-parse/protocol.ts';
import type { ImapSyncConfig, SyncMessage } from './protocol.ts';

export const REDERIVATION_SEGMENT = 200;

/** Re-derivation runs this actor carries, by run id, oldest first; the first is under way. */
export type RederivationQueue = number[];

type MaintenanceState = { db: Database; config: ImapSyncConfig; rederivations: RederivationQueue };
type Maintenance = Extract<SyncMessage, { type: 'imap-sync.rewind' | 'imap-sync.rewind-assessment' | 'imap-sync.erase-pass' | 'imap-sync.rederive' | 'imap-sync.rederivation' }>;

export function isMaintenance(msg: { type: string }): msg is Maintenance {
  return ['imap-sync.rewind', 'imap-sync.rewind-assessment', 'imap-sync.erase-pass', 'imap-sync.rederive', 'imap-sync.rederivation'].includes(msg.type);
}

/** After a restart: carry on every run still under way, from where it was recorded. */
export function resumeRederivations(state: MaintenanceState, ctx: ActorContext): void {
  state.rederivations = outstandingRederivations(state.db, state.config.account).map((r) => r.runId);
  if (state.rederivations.length > 0) ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
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
    case 'imap-sync.rederivation':
      return { run: rederivationRun(db, config.account, msg.folder) };
    case 'imap-sync.rederive': {
      const record = requestRederivation(db, config.account, msg.folder, now);
      if (record.run.isOutstanding && !state.rederivations.includes(record.runId)) {
        state.rederivations.push(record.runId);
        if (state.rederivations.length === 1) ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
      }
      return { started: record.started, carriage: record.carriage, run: record.run };
    }
  }
}

/** One segment of the run under way: re-read raw MIME, parse, rewrite the derived columns, record progress. */
export async function rederivationStep(state: MaintenanceState, ctx: ActorContext, parseMany: (raws: Buffer[]) => Promise<ParseReply[]>): Promise<void> {
  const runId = state.rederivations[0];
  if (runId === undefined) return;
  const { db, config } = state;
  const record = rederivationRecordById(db, runId);
  if (!record || !record.run.isOutstanding) {
    state.rederivations.shift();
    if (state.rederivations.length > 0) ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
    return;
  }
  const after = record.lastMessageId ?? 0;
  const segment = rederivationSegment(db, config.account, record.run.folder, after, REDERIVATION_SEGMENT);
  const readable = segment.filter((row) => row.raw && row.sha256ok);
  const parsed = readable.length > 0 ? await parseMany(readable.map((row) => Buffer.from(row.raw!))) : [];
  const byId = new Map(readable.map((row, i) => [row.id, parsed[i]]));
  const replies = segment.map((row) => byId.get(row.id) ?? null);
  let { rederivedEmailCount: rederived, unreadableEmailCount: unreadable, missingContentEmailCount: missing } = record.run;
  const results: Array<{ id: number; parsed: import('../mime-parse/protocol.ts').ParsedMessage | null }> = [];
  segment.forEach((row, i) => {
    if (!row.raw || !row.sha256ok) {
      missing += 1;
      return;
    }
    const reply = replies[i];
    if (reply?.ok) rederived += 1;
    else unreadable += 1;
    results.push({ id: row.id, parsed: reply?.ok ? reply.message : null });
  });
  const now = Date.now();
  applyDerivations(db, results, now);
  const done = segment.length < REDERIVATION_SEGMENT;
  advanceRederivation(db, runId, { lastMessageId: segment.at(-1)?.id ?? after, rederived, unreadable, missing, done, now });
  if (done) state.rederivations.shift();
  if (state.rederivations.length > 0) ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
}
