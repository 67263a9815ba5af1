/**
 * The `assertion_replays` table (runtime/store/migrations/0001-initial.ts).
 * Sole writer: the replay guard actor (actor.ts beside this file), on its own
 * connection; the main thread never runs these statements.
 *
 * A claim is ONE statement, `INSERT ... ON CONFLICT DO NOTHING`: the
 * primary key decides, so two claims of one identifier racing on two
 * connections (or two instances sharing a libSQL server) cannot both be
 * fresh. A remembered identifier is refused even after its `expires_at`,
 * until pruning deletes it; the judge refuses an expired assertion anyway.
 *
 * Importable from actors/replay-guard/ only.
 */
import type { Database } from '../../runtime/store/open.ts';
import { run } from '../../runtime/store/rows.ts';

export type ReplayStatements = {
  /** Store `jti` until `expiresAt` (epoch ms); true when it was not there. */
  claim(jti: string, expiresAt: number): boolean;
  /** Delete every identifier whose assertion has expired at `now`; how many went. */
  prune(now: number): number;
};

export function replayStatements(db: Database): ReplayStatements {
  const insert = db.prepare('INSERT INTO assertion_replays (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING');
  const expired = db.prepare('DELETE FROM assertion_replays WHERE expires_at <= ?');
  return {
    claim: (jti, expiresAt) => run(insert, [jti, expiresAt]).changes === 1,
    prune: (now) => run(expired, [now]).changes,
  };
}
