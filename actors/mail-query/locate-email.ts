/**
 * Which account holds a stored email, for a tool that changes it (the
 * change is recorded by that account's sync actor). Answers only for a live
 * email (not tombstoned) in the current binding of a folder alias the
 * caller's scope configures and the mirror still maps; anything else reads
 * as not found, exactly like an id that names nothing.
 *
 * Pool message `mail-query.locate-email` (`LocateEmailRequest` in,
 * `LocateEmailReply` out; contract: protocol/email-lookup.ts). Reads only.
 */
import type { Database } from '../../runtime/store/open.ts';
import { one } from '../../runtime/store/rows.ts';
import type { LocateEmailReply, LocateEmailRequest } from './protocol/email-lookup.ts';
import { prepared } from './statements.ts';

const sql = `SELECT m.account_id, b.alias FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
  WHERE m.id = ? AND m.state <> 'tombstoned' AND b.retired_at IS NULL AND b.mirrored = 1`;

export function locateEmail(db: Database, msg: LocateEmailRequest): LocateEmailReply {
  const row = one<{ account_id: string; alias: string }>(prepared(db, sql), [msg.messageId]);
  if (row === undefined) return { email: null };
  const account = msg.scope.accounts.find((a) => a.id === row.account_id);
  if (account === undefined || !account.folders.includes(row.alias)) return { email: null };
  return { email: { accountId: row.account_id, folderAlias: row.alias } };
}
