/**
 * Durable repair requests for mail whose content is missing or damaged
 * locally (55001). Sole writer of `repair_requests`: the account's sync
 * actor — the query pool finds the damage and reads only, the MCP layer asks
 * the sync actor, the sync actor records the request here (and later
 * resolves it by refetching). Tombstoning and erasure delete requests with
 * their message (`server-changes.ts`, `erasure.ts`).
 *
 * At most one open request per message (the partial unique index
 * `repair_requests_open`): asking again while one is open changes nothing,
 * whatever the reason, so a message read many times before its repair
 * carries one request, and the first reason stands.
 *
 * Importable by the sync actor.
 */
import type { Database } from '../open.ts';
import { run } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type RepairReason = 'missing' | 'damaged';

export type RepairRequestInput = { messageId: number; accountId: string; reason: RepairReason; now: number };

const statements = perConnection((db: Database) => ({
  // Through SELECT, so a message erased, tombstoned or of another account
  // since it was read records nothing rather than failing a foreign key.
  record: db.prepare(
    `INSERT INTO repair_requests (message_id, account_id, reason, requested_at)
     SELECT id, account_id, ?, ? FROM messages WHERE id = ? AND account_id = ? AND state <> 'tombstoned'
     ON CONFLICT (message_id) WHERE resolved_at IS NULL DO NOTHING`,
  ),
}));

/** Records an open repair request; returns whether a new one was created (false: one is open, or the message is gone). */
export function recordRepairRequest(db: Database, input: RepairRequestInput): boolean {
  return run(statements(db).record, [input.reason, input.now, input.messageId, input.accountId]).changes === 1;
}
