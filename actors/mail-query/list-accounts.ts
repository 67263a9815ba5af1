/**
 * `list_accounts`: the accounts of the caller's scope, in configured order,
 * each with its configured folder aliases and their freshness (see
 * `targets.ts` for what `wasSynchronized` and `synchronizedAt` mean). An
 * account configured but never synchronized is listed with every folder
 * `wasSynchronized: false`.
 *
 * Reads only. Importable by `task.ts`.
 */
import type { Database } from '../../runtime/store/open.ts';
import type { ListAccountsResult } from './protocol/mail-reads.ts';
import type { QueryScope } from './protocol/query-scope.ts';
import { resolveTargets } from './targets.ts';

export function listAccounts(db: Database, scope: QueryScope): ListAccountsResult {
  const targets = resolveTargets(db, scope);
  return {
    accounts: scope.accounts.map((account) => ({
      accountId: account.id,
      folders: targets
        .filter((t) => t.accountId === account.id)
        .map((t) => ({
          alias: t.alias,
          wasSynchronized: t.wasSynchronized,
          synchronizedAt: t.synchronizedAt,
          ...(t.notYetIndexed > 0 ? { notYetIndexed: t.notYetIndexed } : {}),
        })),
    })),
  };
}
