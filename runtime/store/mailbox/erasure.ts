/**
 * Folder erasure, one bounded pass at a time: removes the stored mail of a
 * folder the account no longer mirrors, every generation of its alias, with
 * raw MIME, search documents, passages and their vectors, and outstanding
 * repair requests, and the folder's checkpoint in the pass that empties it.
 * The bindings stay.
 * Tombstones of the folder go too (they count toward the pass's limit, not
 * toward `erasedEmailCount`). Sole writer of the rows touched: the account's
 * sync actor, which the admin route asks for each pass.
 *
 * Answering reads of the erased mail go by the schema's cascade: that table
 * belongs to the answering actor.
 *
 * Importable through `maintenance.ts`.
 */
import { AppError } from '../../errors.ts';
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';
import { scopedBindings } from './scope.ts';

export type ErasePass = {
  erasedEmailCount: number;
  emailsRemain: boolean;
  /** Stored emails of the folder left after the pass (tombstones uncounted): with the passes' counts, the erasure's total. */
  remainingEmailCount: number;
};

const inBindings = 'binding_id IN (SELECT value FROM json_each(?))';
const inIds = 'IN (SELECT value FROM json_each(?))';

const statements = perConnection((db: Database) => ({
  page: db.prepare(`SELECT id, state FROM messages WHERE ${inBindings} ORDER BY id LIMIT ?`),
  children: ['message_raw', 'search_documents', 'passage_vectors', 'passages', 'repair_requests'].map((table) =>
    db.prepare(`DELETE FROM ${table} WHERE message_id ${inIds}`),
  ),
  messages: db.prepare(`DELETE FROM messages WHERE id ${inIds}`),
  remains: db.prepare(`SELECT 1 AS found FROM messages WHERE ${inBindings} LIMIT 1`),
  remaining: db.prepare(`SELECT count(*) AS n FROM messages WHERE ${inBindings} AND state <> 'tombstoned'`),
  checkpoints: db.prepare(`DELETE FROM checkpoints WHERE ${inBindings}`),
  serverCounts: db.prepare(`DELETE FROM folder_server_counts WHERE ${inBindings}`),
}));

/**
 * One pass of at most `limit` messages. Refused (E_SYNC_FOLDER_MIRRORED,
 * nothing erased) while the alias is still mirrored; an alias the account
 * never had, or a folder holding nothing, succeeds having removed nothing.
 * `now` is unused: deleted rows keep no instant.
 */
export function erasePass(db: Database, accountId: string, alias: string, limit: number, _now: number): ErasePass {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('an erasure pass needs a limit of one message or more');
  const s = statements(db);
  const apply = db.transaction((): ErasePass => {
    const bindings = scopedBindings(db, accountId, alias);
    if (bindings.some((binding) => binding.retired_at === null && binding.mirrored === 1)) {
      throw new AppError('E_SYNC_FOLDER_MIRRORED', {
        message: `folder ${alias} of account ${accountId} is still mirrored; remove it from the account's folder mapping and restart, then erase it`,
        details: { account: accountId, folder: alias },
      });
    }
    if (bindings.length === 0) return { erasedEmailCount: 0, emailsRemain: false, remainingEmailCount: 0 };
    const scope = JSON.stringify(bindings.map((binding) => binding.id));
    const page = many<{ id: number; state: string }>(s.page, [scope, limit]);
    if (page.length > 0) {
      const ids = JSON.stringify(page.map((row) => row.id));
      for (const statement of s.children) run(statement, [ids]);
      run(s.messages, [ids]);
    }
    const emailsRemain = one(s.remains, [scope]) !== undefined;
    if (!emailsRemain) {
      run(s.checkpoints, [scope]);
      run(s.serverCounts, [scope]);
    }
    return {
      erasedEmailCount: page.filter((row) => row.state !== 'tombstoned').length,
      emailsRemain,
      remainingEmailCount: emailsRemain ? (one<{ n: number }>(s.remaining, [scope])?.n ?? 0) : 0,
    };
  });
  return apply.immediate();
}
