/**
 * The `accounts` table. Sole writer: boot — `reconcileAccounts` runs on the
 * main thread right after `migrate`, before the actor tree starts, so every
 * configured account has its row before any actor writes mail under it.
 *
 * Rows are never deleted: an account withdrawn from the configuration is
 * marked `configured = 0` and keeps its audits, tombstones and stored mail
 * until an operator erases them.
 */
import type { Database } from './open.ts';
import { many, run } from './rows.ts';

export type AccountReconciliation = { added: string[]; withdrawn: string[] };

export function reconcileAccounts(db: Database, configuredIds: readonly string[], now: number = Date.now()): AccountReconciliation {
  const configured = new Set(configuredIds);
  const apply = db.transaction((): AccountReconciliation => {
    const existing = many<{ id: string; configured: number }>(db.prepare('SELECT id, configured FROM accounts'));
    const known = new Map(existing.map((row) => [row.id, row.configured === 1]));
    const insert = db.prepare('INSERT INTO accounts (id, configured, created_at, updated_at) VALUES (?, 1, ?, ?)');
    const mark = db.prepare('UPDATE accounts SET configured = ?, updated_at = ? WHERE id = ?');
    const added: string[] = [];
    const withdrawn: string[] = [];
    for (const id of configured) {
      const wasConfigured = known.get(id);
      if (wasConfigured === undefined) {
        run(insert, [id, now, now]);
        added.push(id);
      } else if (!wasConfigured) {
        run(mark, [1, now, id]);
      }
    }
    for (const [id, wasConfigured] of known) {
      if (wasConfigured && !configured.has(id)) {
        run(mark, [0, now, id]);
        withdrawn.push(id);
      }
    }
    return { added, withdrawn };
  });
  return apply.immediate();
}
