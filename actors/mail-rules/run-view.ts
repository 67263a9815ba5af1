/**
 * A rule run as the admin answer shows it (`RuleRun`), from its record and
 * the rate measured while the actor carried it (none after a restart until
 * it has judged again). Pure.
 *
 * Importable by the mail-rules actor.
 */
import type { RunRecord } from '../../runtime/store/mail-rules/rule-records.ts';
import { workProgress } from '../../runtime/work-progress.ts';
import type { RuleRun } from './protocol.ts';

const iso = (ms: number): string => new Date(ms).toISOString();

export function runView(run: RunRecord, perSecond: number | null): RuleRun {
  const ended = run.endedAt !== null;
  return {
    account: run.accountId,
    runId: run.id,
    requestedAt: iso(run.requestedAt),
    isOutstanding: !ended,
    judgedEmailCount: run.judged,
    totalEmailCount: run.total,
    matchedEmailCount: run.matched,
    changeCount: run.changes,
    // An ended run covered all it was asked to, even where mail was expunged meanwhile.
    progress: workProgress(ended ? run.total : Math.min(run.judged, run.total), run.total, ended ? null : perSecond),
    endedAt: run.endedAt === null ? null : iso(run.endedAt),
    outcome: run.outcome,
  };
}
