/**
 * The stored source of an attachment link, read on the read-only query
 * pool: the message is read afresh, so a link dies with its message. Decodes
 * nothing (the parse pool does, `mime-parse.extract-attachment`; the main
 * thread joins the two in http/attachments/redeem.ts) and writes nothing.
 *
 * The source is given only when all of these hold, and null otherwise (one
 * answer for every case: the route turns it into its single 404):
 * - the message exists, is `stored` (not tombstoned, expunged, erased,
 *   oversized or unreadable) and belongs to one of `accounts` (the accounts
 *   the configured owner controls now, so an account taken out of the
 *   configuration takes its links with it);
 * - its raw MIME is present and matches its SHA-256 (damaged content is not
 *   served);
 * - when the message's attachment list is stored (it is what agents were
 *   shown), it lists an attachment at `index`; the source then carries that
 *   entry's SHA-256 (`listedSha256`), which the decoded part must match, so
 *   a later parser that lists attachments differently never serves another
 *   attachment than the one the link named (until the message is
 *   re-derived such a link answers 404). While the message is not derived,
 *   `listedSha256` is null and the parser's list alone decides.
 *
 * Pool message `mail-query.attachment` (its contract:
 * protocol/attachment-source.ts); `answerAttachmentSource` is the handler,
 * returning the reply with the raw bytes marked for transfer rather than
 * copy. The listener builds `accounts` from the same configuration as every
 * query's scope.
 *
 * Importable by the query pool task and tests.
 */
import { createHash } from 'node:crypto';
import { transfer, type WithTransfer } from '../../runtime/actor.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one, type Statement } from '../../runtime/store/rows.ts';
import { MAX_ATTACHMENT_INDEX } from '../../runtime/store/mailbox/derived-message.ts';
import type { AttachmentSourceReply, AttachmentSourceRequest } from './protocol/attachment-source.ts';

export type AttachmentSourceQuery = { messageId: number; index: number; accounts: readonly string[] };

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

export function readAttachmentSource(db: Database, query: AttachmentSourceQuery): { raw: Buffer; listedSha256: string | null } | null {
  if (!Number.isSafeInteger(query.messageId) || query.messageId <= 0) return null;
  if (!Number.isSafeInteger(query.index) || query.index < 0 || query.index > MAX_ATTACHMENT_INDEX) return null;
  const row = one<Row>(select(db), [query.messageId]);
  if (row === undefined || !query.accounts.includes(row.account_id)) return null;
  const raw = bytes(row.mime);
  const sha256 = bytes(row.sha256);
  if (raw === null || sha256 === null || !createHash('sha256').update(raw).digest().equals(sha256)) return null;
  if (row.attachments_json === null) return { raw, listedSha256: null };
  // A stored list without an entry at `index` names no attachment there, whatever the parser finds now.
  const listed = listedSha256(row.attachments_json, query.index);
  return listed === null ? null : { raw, listedSha256: listed };
}

/** The pool handler: the reply, its raw bytes moved to the asking thread instead of copied. */
export function answerAttachmentSource(db: Database, request: AttachmentSourceRequest): AttachmentSourceReply | WithTransfer<AttachmentSourceReply> {
  const found = readAttachmentSource(db, request);
  if (found === null) return null;
  const raw = owned(found.raw);
  return transfer<AttachmentSourceReply>({ raw, listedSha256: found.listedSha256 }, [raw.buffer as ArrayBuffer]);
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

/**
 * The bytes in an ArrayBuffer of their own, so that moving them detaches
 * nothing else. libsql 0.5 already gives each BLOB its own (checked against
 * 0.5.29); the copy only guards a driver that hands out slices of a shared one.
 */
function owned(raw: Buffer): Buffer {
  if (raw.buffer instanceof ArrayBuffer && raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength) return raw;
  const copy = Buffer.allocUnsafeSlow(raw.byteLength);
  raw.copy(copy);
  return copy;
}
