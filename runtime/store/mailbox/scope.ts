/**
 * The bindings an operator's scope (an account, optionally a folder alias)
 * covers: every generation of the alias, or every binding of the account —
 * retired generations and withdrawn mappings included, since a scope
 * without a folder covers every folder the account holds mail in
 * (docs/admin-api.md "Rewind"). Writes nothing.
 *
 * Importable by modules under `runtime/store/mailbox/` only.
 */
import type { Database } from '../open.ts';
import { many } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type ScopedBinding = { id: number; alias: string; mirrored: number; retired_at: number | null };

const statements = perConnection((db: Database) => ({
  account: db.prepare('SELECT id, alias, mirrored, retired_at FROM folder_bindings WHERE account_id = ? ORDER BY id'),
  alias: db.prepare('SELECT id, alias, mirrored, retired_at FROM folder_bindings WHERE account_id = ? AND alias = ? ORDER BY id'),
}));

/** A blank folder is an omission (docs/admin-api.md "Rewind": absent, `null` or blank). */
export function folderOf(alias: string | null | undefined): string | null {
  return alias === undefined || alias === null || alias.trim() === '' ? null : alias;
}

export function scopedBindings(db: Database, accountId: string, folder: string | null): ScopedBinding[] {
  const s = statements(db);
  return folder === null ? many<ScopedBinding>(s.account, [accountId]) : many<ScopedBinding>(s.alias, [accountId, folder]);
}
