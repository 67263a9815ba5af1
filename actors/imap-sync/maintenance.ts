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
  applyDerivation,
  erasePass,
  rederivationRun,
  rederivationSegment,
  requestRederivation,
  rewind,
  rewindAssessment,
  type RederivationRun,
} from '../../runtime/store/mailbox/maintenance.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { ParseReply } from '../mime-parse/protocol.ts';
import type { ImapSyncConfig, SyncMessage } from './protocol.ts';

export const REDERIVATION_SEGMENT = 200;

export type RederivationCursor = { runId: number; folder: string | null; after: number; rederived: number; unreadable: number; missing: number };

type MaintenanceState = { db: Database; config: ImapSyncConfig; rederivation: RederivationCursor | null };
type Maintenance = Extract<SyncMessage, { type: 'imap-sync.rewind' | 'imap-sync.rewind-assessment' | 'imap-sync.erase-pass' | 'imap-sync.rederive' | 'imap-sync.rederivation' }>;

export function isMaintenance(msg: { type: string }): msg is Maintenance {
  return ['imap-sync.rewind', 'imap-sync.rewind-assessment', 'imap-sync.erase-pass', 'imap-sync.rederive', 'imap-sync.rederivation'].includes(msg.type);
}

export function handleMaintenance(state: MaintenanceState, ctx: ActorContext, msg: Maintenance): unknown {
  const { db, config } = state;
  const now = Date.now();
  switch (msg.type) {
    case 'imap-sync.rewind-assessment':
      return rewindAssessment(db, config.account, msg.folder ?? undefined);
    case 'imap-sync.rewind':
      return rewind(db, config.account, msg.folder ?? undefined, now);
    case 'imap-sync.erase-pass':
      return erasePass(db, config.account, msg.folder, msg.limit, now);
    case 'imap-sync.rederivation':
      return { run: rederivationRun(db, config.account, msg.folder) };
    case 'imap-sync.rederive': {
      const { started, run } = requestRederivation(db, config.account, msg.folder, now);
      if (run.isOutstanding && state.rederivation === null) {
        state.rederivation = { runId: runIdOf(run), folder: msg.folder, after: 0, rederived: 0, unreadable: 0, missing: 0 };
        ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
      }
      return { started, carriage: 'carried', run: publicRun(run) };
    }
  }
}

/** One segment of the re-derivation under way; schedules the next until the scope is done. */
export async function rederivationStep(state: MaintenanceState, ctx: ActorContext, parse: (raw: Buffer) => Promise<ParseReply>): Promise<void> {
  const cursor = state.rederivation;
  if (!cursor) return;
  const { db, config } = state;
  const segment = rederivationSegment(db, config.account, cursor.folder, cursor.after, REDERIVATION_SEGMENT);
  const replies = await Promise.all(segment.map((row) => (row.raw && row.sha256ok ? parse(Buffer.from(row.raw)) : Promise.resolve(null))));
  const now = Date.now();
  segment.forEach((row, i) => {
    const reply = replies[i];
    if (!row.raw || !row.sha256ok) {
      cursor.missing += 1;
      return;
    }
    if (reply?.ok) cursor.rederived += 1;
    else cursor.unreadable += 1;
    applyDerivation(db, row.id, reply?.ok ? reply.message : null, now);
  });
  const done = segment.length < REDERIVATION_SEGMENT;
  cursor.after = segment.at(-1)?.id ?? cursor.after;
  advanceRederivation(db, cursor.runId, { lastMessageId: cursor.after, rederived: cursor.rederived, unreadable: cursor.unreadable, missing: cursor.missing, done, now });
  if (done) state.rederivation = null;
  else ctx.schedule({ type: 'imap-sync.rederive-step' }, 0);
}

function runIdOf(run: RederivationRun): number {
  return (run as RederivationRun & { id: number }).id;
}

function publicRun(run: RederivationRun): Omit<RederivationRun, 'id'> {
  const { id: _id, ...rest } = run as RederivationRun & { id?: number };
  return rest;
}
