/**
 * One page of an account's rule history (`mail_rule_history`, written by
 * the mail-rules actor) on the read-only query pool, for the admin route
 * `GET /api/admin/rules/history`: newest first by when each conclusion was
 * written, then id, keyset-paginated (audit-window.ts). Each entry carries
 * the changes recorded for it, joined with the journal's jobs by id, so the
 * change's state and outcome read as they are now.
 *
 * Pool message `mail-query.rule-history` (contract:
 * protocol/rule-history.ts). Reads only; logs nothing.
 */
import { views } from '../../runtime/store/mailbox/changes.ts';
import type { Database } from '../../runtime/store/open.ts';
import { auditWindow } from './audit-window.ts';
import type { RuleHistoryEntry, RuleHistoryReply, RuleHistoryRequest } from './protocol/rule-history.ts';
import { encodeStoredEmailId } from './protocol/stored-email-id.ts';
import { iso } from './statements.ts';

type Row = {
  id: number;
  rule_name: string;
  rule_position: number;
  message_id: number;
  run_id: number | null;
  asked: string;
  job_ids: string;
  note: string | null;
  ended_at: number;
};

export function ruleHistoryPage(db: Database, msg: RuleHistoryRequest): RuleHistoryReply {
  const { window, next } = auditWindow<Row>(
    db,
    'SELECT id, rule_name, rule_position, message_id, run_id, asked, job_ids, note, ended_at FROM mail_rule_history',
    msg,
  );
  return { entries: window.map((row) => toEntry(db, row)), next };
}

function toEntry(db: Database, row: Row): RuleHistoryEntry {
  return {
    id: row.id,
    rule: row.rule_name,
    rulePosition: row.rule_position,
    storedEmailId: encodeStoredEmailId(row.message_id),
    source: row.run_id === null ? 'Arrival' : 'Run',
    runId: row.run_id,
    asked: JSON.parse(row.asked) as RuleHistoryEntry['asked'],
    note: row.note,
    changes: views(db, JSON.parse(row.job_ids) as number[]).map((v) => ({ changeId: v.changeId, change: v.change, state: v.state, outcome: v.outcome })),
    concludedAt: iso(row.ended_at),
  };
}
