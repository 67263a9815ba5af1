/**
 * Folder bindings: which remote folder each configured alias of an account
 * mirrors. Sole writer of `folder_bindings`: the account's sync actor (it
 * calls `syncBindings` when it starts and whenever it resolves the aliases
 * against the server's folder list).
 *
 * A binding's generation is bound to one remote folder for life: when an
 * alias resolves to another folder, the current generation is retired (it
 * keeps its mail until erased) and a new one starts, so mail of two folders
 * never shares one identity space. An alias that resolves to nothing, or to
 * several folders, keeps its generation and reads as unresolved (`path`
 * null); coming back on the same folder resumes it. An alias no longer in
 * the configuration stays, marked not mirrored, which makes it erasable.
 *
 * Importable by the sync actor and the status query.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type Binding = { id: number; accountId: string; alias: string; path: string | null; mirrored: boolean; generation: number };

type Row = {
  id: number;
  account_id: string;
  alias: string;
  generation: number;
  remote_path: string | null;
  mirrored: number;
  unresolved_since: number | null;
};

const columns = 'id, account_id, alias, generation, remote_path, mirrored, unresolved_since';

const statements = perConnection((db: Database) => ({
  ensureAccount: db.prepare('INSERT INTO accounts (id, configured, created_at, updated_at) VALUES (?, 1, ?, ?) ON CONFLICT (id) DO NOTHING'),
  current: db.prepare(`SELECT ${columns} FROM folder_bindings WHERE account_id = ? AND retired_at IS NULL ORDER BY alias`),
  byId: db.prepare(`SELECT ${columns}, retired_at FROM folder_bindings WHERE id = ?`),
  nextGeneration: db.prepare('SELECT ifnull(max(generation), 0) + 1 AS generation FROM folder_bindings WHERE account_id = ? AND alias = ?'),
  insert: db.prepare(
    `INSERT INTO folder_bindings (account_id, alias, generation, remote_path, mirrored, created_at, unresolved_since)
     VALUES (?, ?, ?, ?, 1, ?, ?)`,
  ),
  retire: db.prepare('UPDATE folder_bindings SET retired_at = ?, mirrored = 0 WHERE id = ?'),
  resolve: db.prepare('UPDATE folder_bindings SET remote_path = ?, unresolved_since = NULL, mirrored = 1 WHERE id = ?'),
  unresolve: db.prepare('UPDATE folder_bindings SET unresolved_since = ifnull(unresolved_since, ?), mirrored = 1 WHERE id = ?'),
  withdraw: db.prepare('UPDATE folder_bindings SET mirrored = 0 WHERE id = ? AND mirrored = 1'),
}));

/**
 * Brings the account's bindings in line with its configured folders and
 * returns the current binding of every alias the account ever had (retired
 * generations are left out; erasure and rewind reach them by alias).
 */
export function syncBindings(db: Database, accountId: string, folders: ReadonlyArray<{ alias: string; path: string | null }>, now: number): Binding[] {
  const s = statements(db);
  const apply = db.transaction((): Binding[] => {
    // The boot reconciles accounts before any actor starts; tolerate a row
    // that is missing anyway rather than fail every write under it.
    run(s.ensureAccount, [accountId, now, now]);
    const current = new Map(many<Row>(s.current, [accountId]).map((row) => [row.alias, row]));
    const configured = new Set<string>();
    for (const folder of folders) {
      configured.add(folder.alias);
      bind(db, accountId, folder.alias, current.get(folder.alias), folder.path, now);
    }
    for (const row of current.values()) {
      if (!configured.has(row.alias)) run(s.withdraw, [row.id]);
    }
    return many<Row>(s.current, [accountId]).map(toBinding);
  });
  return apply.immediate();
}

/**
 * Records what the binding's alias resolves to now. Returns the binding that
 * is current afterwards: a new generation (new id) when `path` names another
 * folder than the one this generation was bound to.
 */
export function setBindingPath(db: Database, bindingId: number, path: string | null, now: number): Binding {
  const s = statements(db);
  const apply = db.transaction((): Binding => {
    const row = one<Row & { retired_at: number | null }>(s.byId, [bindingId]);
    if (row === undefined) throw new Error(`folder binding ${bindingId} does not exist`);
    if (row.retired_at !== null) throw new Error(`folder binding ${bindingId} is retired`);
    const id = bind(db, row.account_id, row.alias, row, path, now);
    return toBinding(one<Row>(s.byId, [id])!);
  });
  return apply.immediate();
}

/** Applies one alias's resolution inside the caller's transaction; returns the current binding id. */
function bind(db: Database, accountId: string, alias: string, row: Row | undefined, path: string | null, now: number): number {
  const s = statements(db);
  if (row === undefined) {
    const generation = one<{ generation: number }>(s.nextGeneration, [accountId, alias])!.generation;
    return Number(run(s.insert, [accountId, alias, generation, path, now, path === null ? now : null]).lastInsertRowid);
  }
  if (path === null) {
    run(s.unresolve, [now, row.id]);
    return row.id;
  }
  if (row.remote_path === null || row.remote_path === path) {
    run(s.resolve, [path, row.id]);
    return row.id;
  }
  run(s.retire, [now, row.id]);
  const generation = one<{ generation: number }>(s.nextGeneration, [accountId, alias])!.generation;
  return Number(run(s.insert, [accountId, alias, generation, path, now, null]).lastInsertRowid);
}

function toBinding(row: Row): Binding {
  return {
    id: row.id,
    accountId: row.account_id,
    alias: row.alias,
    path: row.unresolved_since === null ? row.remote_path : null,
    mirrored: row.mirrored === 1,
    generation: row.generation,
  };
}

/**
 * At the sync actor's start: bindings whose alias the configuration no
 * longer maps read as not mirrored at once, before the first run resolves
 * anything (the folder becomes erasable; its mail stays until erased).
 */
export function withdrawUnconfigured(db: Database, accountId: string, configuredAliases: readonly string[]): number {
  const s = statements(db);
  const configured = new Set(configuredAliases);
  let withdrawn = 0;
  const apply = db.transaction(() => {
    for (const row of many<Row>(s.current, [accountId])) {
      if (!configured.has(row.alias)) withdrawn += run(s.withdraw, [row.id]).changes;
    }
  });
  apply.immediate();
  return withdrawn;
}
