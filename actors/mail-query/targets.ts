/**
 * What a read tool call may see: the caller's scope (accounts and their
 * configured folder aliases) narrowed by the call's `accounts` and `folders`,
 * resolved to the folder bindings whose mail is visible, with each folder's
 * freshness. An account or alias outside the scope is refused exactly like
 * one that does not exist (E_NOT_FOUND, 53001).
 *
 * Visible mail lives in the current (not retired) binding of a configured
 * alias that is still mirrored; mail of retired generations and withdrawn
 * aliases stays in the store for erasure but no tool shows it.
 *
 * Freshness (`folderFreshness`, entries `wasSynchronized`,
 * `synchronizedAt`; docs/mcp-read-tools.md):
 * - `synchronizedAt` is when the latest folder pass that ended `ok` with
 *   nothing left to fetch finished: the last instant the mirror is known to
 *   have been caught up with the server. A pass that stopped at its batch
 *   budget (more to fetch) does not count, so a first mirror still catching
 *   up never claims to be current. Only the runs the sync actor retains
 *   (its latest 20 per account) are consulted; older ones read as none.
 * - `wasSynchronized` is true when there is such an instant, or the binding
 *   holds a checkpoint (mail has been stored from it). True with a null
 *   `synchronizedAt` therefore reads "partly mirrored: a first catch-up is
 *   under way, or the last complete pass is older than the retained runs".
 * - `notYetIndexed` (ours; omitted when 0) counts the folder's emails that
 *   are mirrored but not parsed and indexed yet by the derivation writer:
 *   until they are, no tool lists or finds them.
 *
 * Reads only. Importable by modules of `actors/mail-query/` only.
 */
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one } from '../../runtime/store/rows.ts';
import { underivedInBinding } from '../../runtime/store/mailbox/underived.ts';
import type { FolderFreshness } from './protocol/mail-reads.ts';
import type { QueryScope } from './protocol/query-scope.ts';
import { iso, prepared } from './statements.ts';

export type Target = {
  accountId: string;
  alias: string;
  /** The visible binding, or null when the alias has none (never synchronized, or not mirrored). */
  bindingId: number | null;
  wasSynchronized: boolean;
  synchronizedAt: string | null;
  /** Mirrored emails the derivation writer has not parsed and indexed yet. */
  notYetIndexed: number;
};

const bindingSql = `SELECT b.id, b.mirrored, c.binding_id AS checkpointed,
    (SELECT max(f.ended_at) FROM sync_folder_runs f WHERE f.binding_id = b.id AND f.outcome = 'ok' AND f.has_more = 0) AS caught_up_at
  FROM folder_bindings b LEFT JOIN checkpoints c ON c.binding_id = b.id
  WHERE b.account_id = ? AND b.alias = ? AND b.retired_at IS NULL`;

type BindingRow = { id: number; mirrored: number; checkpointed: number | null; caught_up_at: number | null };

/**
 * The folders a call covers, in scope order (accounts as configured, each
 * account's aliases as configured). `accounts`/`folders` narrow the scope;
 * naming anything outside it is E_NOT_FOUND. A folder alias applies to every
 * selected account that configures it, and must be configured by at least one.
 */
export function resolveTargets(db: Database, scope: QueryScope, accounts?: readonly string[], folders?: readonly string[]): Target[] {
  const selected = accounts === undefined ? scope.accounts : [...new Set(accounts)].map((id) => scope.accounts.find((a) => a.id === id) ?? notFound());
  if (folders !== undefined) {
    for (const alias of folders) if (!selected.some((account) => account.folders.includes(alias))) notFound();
  }
  const wanted = folders === undefined ? null : new Set(folders);
  const targets: Target[] = [];
  for (const account of selected) {
    for (const alias of new Set(account.folders)) {
      if (wanted !== null && !wanted.has(alias)) continue;
      targets.push(target(db, account.id, alias));
    }
  }
  return targets;
}

function target(db: Database, accountId: string, alias: string): Target {
  const row = one<BindingRow>(prepared(db, bindingSql), [accountId, alias]);
  if (row === undefined || row.mirrored !== 1) return { accountId, alias, bindingId: null, wasSynchronized: false, synchronizedAt: null, notYetIndexed: 0 };
  return {
    accountId,
    alias,
    bindingId: row.id,
    wasSynchronized: row.caught_up_at !== null || row.checkpointed !== null,
    synchronizedAt: row.caught_up_at === null ? null : iso(row.caught_up_at),
    notYetIndexed: underivedInBinding(db, accountId, row.id),
  };
}

export function freshnessOf(targets: readonly Target[]): FolderFreshness[] {
  return targets.map((t) => ({
    accountId: t.accountId,
    folderAlias: t.alias,
    wasSynchronized: t.wasSynchronized,
    synchronizedAt: t.synchronizedAt,
    ...(t.notYetIndexed > 0 ? { notYetIndexed: t.notYetIndexed } : {}),
  }));
}

/** binding id → its target, for the visible bindings among `targets`. */
export function visibleBindings(targets: readonly Target[]): Map<number, Target> {
  const map = new Map<number, Target>();
  for (const t of targets) if (t.bindingId !== null) map.set(t.bindingId, t);
  return map;
}

function notFound(): never {
  throw new AppError('E_NOT_FOUND');
}
