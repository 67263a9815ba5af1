/**
 * Rewind: the expensive route for what only the mail server knows (flags,
 * keywords, internal date). Discards the progress of every binding in scope
 * so the next run fetches its folder again (held UIDs are refreshed, not
 * duplicated), and bumps those bindings' epoch so a run under way has its
 * next advance refused. Erases no mail. Sole writer of the rows touched
 * (`checkpoints`, `folder_bindings.progress_epoch`): the account's sync
 * actor, which the admin route asks.
 *
 * Importable through `maintenance.ts`.
 */
import type { Database } from '../open.ts';
import { one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';
import { folderOf, scopedBindings } from './scope.ts';

export type RewindAssessment = { account: string; folder: string | null; storedEmailCount: number };
export type RewindResult = { account: string; folder: string | null; folders: string[] };

const statements = perConnection((db: Database) => ({
  // Every local copy that is not a tombstone would be fetched again.
  count: db.prepare("SELECT count(*) AS n FROM messages WHERE binding_id IN (SELECT value FROM json_each(?)) AND state <> 'tombstoned'"),
  hasProgress: db.prepare('SELECT 1 AS held FROM checkpoints WHERE binding_id = ?'),
  discard: db.prepare('DELETE FROM checkpoints WHERE binding_id = ?'),
  bump: db.prepare('UPDATE folder_bindings SET progress_epoch = progress_epoch + 1 WHERE id = ?'),
}));

/** GET: how many stored emails of the scope a rewind would have fetched again. */
export function rewindAssessment(db: Database, accountId: string, alias?: string | null): RewindAssessment {
  const folder = folderOf(alias);
  const ids = scopedBindings(db, accountId, folder).map((binding) => binding.id);
  const storedEmailCount = ids.length === 0 ? 0 : (one<{ n: number }>(statements(db).count, [JSON.stringify(ids)])?.n ?? 0);
  return { account: accountId, folder, storedEmailCount };
}

/**
 * POST: discards the progress of the bindings in scope; answers the aliases
 * whose progress was discarded. `now` is unused: nothing records when (the
 * checkpoint row is gone, and the next advance sets its instant).
 */
export function rewind(db: Database, accountId: string, alias: string | null | undefined, _now: number): RewindResult {
  const folder = folderOf(alias);
  const s = statements(db);
  const apply = db.transaction((): RewindResult => {
    const folders = new Set<string>();
    for (const binding of scopedBindings(db, accountId, folder)) {
      if (one(s.hasProgress, [binding.id]) === undefined) continue;
      run(s.discard, [binding.id]);
      run(s.bump, [binding.id]);
      folders.add(binding.alias);
    }
    return { account: accountId, folder, folders: [...folders].sort() };
  });
  return apply.immediate();
}
