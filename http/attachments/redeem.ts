/**
 * Redeeming a verified attachment link, on the main thread: the read-only
 * query pool reads the message's stored source afresh
 * (`mail-query.attachment`: raw MIME checked against its SHA-256, and the
 * SHA-256 its stored attachment list gives at the link's index), then the
 * parse pool decodes that one attachment (`mime-parse.extract-attachment`).
 * The raw bytes are moved from one pool to the other, never copied on the
 * way. The main thread neither runs SQL nor parses MIME.
 *
 * null, for the route's single 404, when either pool finds nothing to serve,
 * and when the part the parser finds at the index is not the one the stored
 * list names there (another SHA-256 of the encoded body): a later parser
 * that lists attachments differently never serves another attachment than
 * the link named. A failed ask rejects (the route answers 503 or 500).
 *
 * Logs nothing: no bytes, file names or addresses. Importable by the MCP
 * listener and tests.
 */
import { type AttachmentSourceProtocol, AttachmentSourceReply } from '../../actors/mail-query/protocol/attachment-source.ts';
import { ExtractAttachmentReply, type MimeParseProtocol } from '../../actors/mime-parse/protocol.ts';
import type { Askable } from '../../runtime/ref.ts';
import type { AttachmentDownload } from './attachment-route.ts';

export type RedeemDeps = {
  /** The read-only query pool: the stored source. */
  queryPool: Askable<AttachmentSourceProtocol>;
  /** The MIME parse pool: the decoding. */
  parsePool: Askable<MimeParseProtocol>;
};

/** What a verified capability names: `messages.id` and the position in its attachment list. */
export type RedeemTarget = { messageId: number; index: number };

/**
 * `accounts`: the accounts the caller may read (the configured owner's, narrowed to the link's).
 * `deadlineMs`: what is left of the request's time, shared by both asks.
 */
export async function redeemAttachment(
  deps: RedeemDeps,
  target: RedeemTarget,
  accounts: readonly string[],
  deadlineMs: number,
): Promise<AttachmentDownload | null> {
  const end = Date.now() + deadlineMs;
  const source = await deps.queryPool.ask(
    { type: 'mail-query.attachment', messageId: target.messageId, index: target.index, accounts: [...accounts] },
    { reply: AttachmentSourceReply, deadlineMs },
  );
  if (source === null) return null;
  const { raw, listedSha256 } = source;
  const extracted = await deps.parsePool.ask(
    { type: 'mime-parse.extract-attachment', raw, index: target.index },
    {
      reply: ExtractAttachmentReply,
      deadlineMs: Math.max(1, end - Date.now()),
      // The query pool moved the bytes here in a buffer of their own; move them on.
      ...(raw.buffer instanceof ArrayBuffer ? { transfer: [raw.buffer] } : {}),
    },
  );
  if (extracted === null) return null;
  if (listedSha256 !== null && extracted.encodedSha256 !== listedSha256) return null;
  return { filename: extracted.filename, contentType: extracted.contentType, content: extracted.content };
}
