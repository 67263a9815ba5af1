/**
 * Redeeming an attachment link on the read-only query pool: the message is
 * read afresh, so a link dies with its message, and one attachment is
 * decoded out of the stored raw MIME. Writes nothing.
 *
 * Served only when all of these hold, and null otherwise (one answer for
 * every case: the route turns it into its single 404):
 * - the message exists, is `stored` (not tombstoned, expunged, erased,
 *   oversized or unreadable) and belongs to one of `accounts` (the accounts
 *   the configured owner controls now, so an account taken out of the
 *   configuration takes its links with it);
 * - its raw MIME is present and matches its SHA-256 (damaged content is not
 *   served);
 * - the attachment exists at `index` in the parser's list, and, when the
 *   message's attachment list is stored (it is what agents were shown), the
 *   part found there is the one listed at that index (same SHA-256 of the
 *   encoded body). A later parser that lists attachments differently thus
 *   never serves another attachment than the one the link named; until the
 *   message is re-derived such a link answers 404.
 *
 * Pool message `mail-query.attachment` (schemas in attachment-messages.ts,
 * carried by protocol.ts); `answerAttachment` is the handler, returning the reply with its bytes
 * marked for transfer rather than copy. The listener builds `accounts` from
 * the same configuration as every query's scope.
 *
 * Importable by the query pool task and tests.
 */
import { createHash } from 'node:crypto';
import { extractAttachment } from '../mime-parse/attachment-content.ts';
import { transfer, type WithTransfer } from '../../runtime/actor.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one, type Statement } from '../../runtime/store/rows.ts';
import { type AttachmentReply, type AttachmentRequest, MAX_ATTACHMENT_INDEX } from './attachment-messages.ts';

export type AttachmentQuery = { messageId: number; index: number; accounts: readonly string[] };

type Row = {
  account_id: string;
  attachments_json: string | null;
  mime: Uint8Array | ArrayBuffer | null;
  sha256: Uint8Array | ArrayBuffer | null;
};

const statements = new WeakMap<Database, Statement>();

function select(db: Database): Statement {
  let statement = statements.get(db);
  if (statement === undefined) {
    statement = db.prepare(
      `SELECT m.account_id, m.attachments_json, r.mime, r.sha256
       FROM messages m JOIN message_raw r ON r.message_id = m.id
       WHERE m.id = ? AND m.state = 'stored'`,
    );
    statements.set(db, statement);
  }
  return statement;
}

export function readAttachment(db: Database, query: AttachmentQuery): { filename: string | null; contentType: string; content: Buffer } | null {
  if (!Number.isSafeInteger(query.messageId) || query.messageId <= 0) return null;
  if (!Number.isSafeInteger(query.index) || query.index < 0 || query.index > MAX_ATTACHMENT_INDEX) return null;
  const row = one<Row>(select(db), [query.messageId]);
  if (row === undefined || !query.accounts.includes(row.account_id)) return null;
  const raw = bytes(row.mime);
  const sha256 = bytes(row.sha256);
  if (raw === null || sha256 === null || !createHash('sha256').update(raw).digest().equals(sha256)) return null;
  const found = extractAttachment(raw, query.index);
  if (found === null) return null;
  if (row.attachments_json !== null && listedSha256(row.attachments_json, query.index) !== found.encodedSha256) return null;
  return { filename: found.filename, contentType: found.contentType, content: found.content };
}

/** The pool handler: the reply, its bytes moved to the asking thread instead of copied. */
export function answerAttachment(db: Database, request: AttachmentRequest): AttachmentReply | WithTransfer<AttachmentReply> {
  const found = readAttachment(db, request);
  if (found === null) return null;
  // extractAttachment's content owns its whole ArrayBuffer, so moving it detaches nothing else.
  return transfer<AttachmentReply>(found, [found.content.buffer as ArrayBuffer]);
}

/** The SHA-256 listed at `index` in a stored attachment list, or null. */
function listedSha256(json: string, index: number): string | null {
  try {
    const list: unknown = JSON.parse(json);
    if (!Array.isArray(list)) return null;
    const entry: unknown = list[index];
    if (typeof entry !== 'object' || entry === null) return null;
    const sha256 = (entry as { sha256?: unknown }).sha256;
    return typeof sha256 === 'string' ? sha256 : null;
  } catch {
    return null;
  }
}

/** A BLOB as a Buffer: libsql 0.5 returns a Buffer from `get()` but a bare ArrayBuffer elsewhere. */
function bytes(value: Uint8Array | ArrayBuffer | null): Buffer | null {
  if (value === null) return null;
  return value instanceof Uint8Array ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : Buffer.from(value);
}
