/**
 * The mail spam classification judges, read in id order with its raw MIME:
 * live (`stored`), derived messages of the account whose folder holds mail
 * the owner received. Mail in the sent, drafts, junk, spam and trash folders
 * is never judged (the roles of actors/derivation/collect-correspondents.ts
 * `folderRoleOf`), nor mail already in the folder a spam verdict moves to.
 *
 * Derivation runs in id order, so a derived message never has an underived
 * one before it that will be derived later (a row whose raw MIME is missing
 * stays underived and is never judged).
 *
 * Importable by the spam actor only.
 */
import type { Database } from '../open.ts';
import { many, one } from '../rows.ts';
import { blobOf, perConnection } from '../mailbox/prepared.ts';

/** Aliases whose mail is not received mail (folderRoleOf: `sent`, and `none`). */
export const NOT_RECEIVED_ALIASES = ['sent', 'drafts', 'junk', 'spam', 'trash'] as const;

export type JudgedMessage = { id: number; alias: string; raw: Uint8Array | null };

const where = `m.account_id = ? AND m.id > ? AND m.id <= ? AND m.state = 'stored' AND m.parse_version IS NOT NULL
  AND b.alias NOT IN (SELECT value FROM json_each(?))`;

const statements = perConnection((db: Database) => ({
  segment: db.prepare(
    `SELECT m.id, b.alias, r.mime FROM messages m JOIN folder_bindings b ON b.id = m.binding_id LEFT JOIN message_raw r ON r.message_id = m.id
     WHERE ${where} ORDER BY m.id LIMIT ?`,
  ),
  count: db.prepare(`SELECT count(*) AS count FROM messages m JOIN folder_bindings b ON b.id = m.binding_id WHERE ${where}`),
  highest: db.prepare('SELECT ifnull(max(id), 0) AS id FROM messages WHERE account_id = ?'),
  bound: db.prepare('SELECT remote_path FROM folder_bindings WHERE account_id = ? AND alias = ? AND retired_at IS NULL AND mirrored = 1'),
}));

function skipped(moveAlias: string | null): string {
  return JSON.stringify(moveAlias === null ? NOT_RECEIVED_ALIASES : [...NOT_RECEIVED_ALIASES, moveAlias]);
}

/** The next messages to judge after `afterId`, up to `throughId`, at most `limit`. `moveAlias`: the folder a verdict moves to (its mail is not judged). */
export function judgedSegment(db: Database, accountId: string, afterId: number, throughId: number, limit: number, moveAlias: string | null): JudgedMessage[] {
  return many<{ id: number; alias: string; mime: Uint8Array | ArrayBuffer | null }>(statements(db).segment, [
    accountId,
    afterId,
    throughId,
    skipped(moveAlias),
    limit,
  ]).map((row) => ({ id: row.id, alias: row.alias, raw: blobOf(row.mime) }));
}

/** How many messages a run over `(afterId, throughId]` judges. */
export function judgedCount(db: Database, accountId: string, afterId: number, throughId: number, moveAlias: string | null): number {
  return one<{ count: number }>(statements(db).count, [accountId, afterId, throughId, skipped(moveAlias)])?.count ?? 0;
}

/** The account's highest message id (0: none stored). */
export function highestMessageId(db: Database, accountId: string): number {
  return one<{ id: number }>(statements(db).highest, [accountId])?.id ?? 0;
}

/** The server path the account's folder alias is bound to now; null when it has no binding (unresolved, or never seen). */
export function boundPath(db: Database, accountId: string, alias: string): string | null {
  return one<{ remote_path: string | null }>(statements(db).bound, [accountId, alias])?.remote_path ?? null;
}
