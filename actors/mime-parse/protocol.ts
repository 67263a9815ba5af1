/**
 * Public messages of the MIME parse pool (`mime-parse`): raw MIME in (moved,
 * not copied), the properties agents need out. Stateless: runs on a piscina
 * pool behind `ask`. The sync actor asks it for every fetched message and
 * the re-derivation segments ask it for stored ones; the attachment route
 * asks it to decode one attachment of a stored message
 * (`mime-parse.extract-attachment`). Threads that parse where they are load
 * its modules in place by URL: the parser (`MIME_PARSE_IN_PLACE`) and the
 * reader of a reply's or forward's original (`MIME_READ_ORIGINAL`).
 *
 * PARSE_VERSION is recorded beside every derived row; raising it is how a
 * change to derivation asks for re-derivation of stored mail.
 */
import { z } from 'zod';
import { DerivedMessage, MAX_ATTACHMENT_INDEX, StoredAddress, StoredAttachment } from '../../runtime/store/mailbox/derived-message.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { PoolEntry } from '../../runtime/pool/pool.ts';
import type { ProtocolOf } from '../../runtime/ref.ts';

/** The task module of the MIME parse pool. Named here, as a URL, so that the composition root starts it without importing it. */
export const MIME_PARSE_TASK: PoolEntry<MimeParseProtocol> = moduleUrl('./task.ts', import.meta.url);

/**
 * The parser itself (`parseMessage`, a `ParseInPlace`), named as a URL for a
 * thread that parses small messages where they are instead of asking the
 * pool: no copy, no hop through the main thread, no reply to validate.
 */
export const MIME_PARSE_IN_PLACE = moduleUrl('./parse-message.ts', import.meta.url);

/** The in-place parser's shape: pure, synchronous, never throws (parse-message.ts). */
export type ParseInPlace = (raw: Uint8Array, account: string) => ParseReply;

/**
 * The reader of a stored message that a reply or forward answers
 * (`readOriginal`, a `ReadOriginal`), named as a URL for the outbox thread,
 * which loads it in place on its first reply or forward.
 */
export const MIME_READ_ORIGINAL = moduleUrl('./read-original.ts', import.meta.url);

/** One attachment a forward carries, decoded byte for byte. */
export type OriginalAttachment = { filename: string | null; contentType: string; content: Buffer };

/**
 * What a reply or forward reads of the message it answers: the properties a
 * parse gives (`ParsedMessage`), and the attachments, decoded only when
 * asked (a forward) and without the images its HTML shows (parts with a
 * Content-ID inside a multipart/related).
 */
export type OriginalMessage = Pick<ParsedMessage, 'messageId' | 'references' | 'subject' | 'from' | 'replyTo' | 'to' | 'cc' | 'sentAt' | 'bodyText'> & {
  attachments(): OriginalAttachment[];
};

/** The original reader's shape: pure, synchronous, never throws; null for a message the parser calls unreadable. */
export type ReadOriginal = (raw: Uint8Array) => OriginalMessage | null;

export const PARSE_VERSION = 1;

/** Raw bytes as any thread hands them over: a Buffer, or a view of a shared or moved buffer. */
const Bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be bytes' });

export const ParseRequest = z.strictObject({
  type: z.literal('mime-parse.parse'),
  /** The account id, mixed into the thread id so threads never join across accounts. */
  account: z.string(),
  raw: Bytes,
});
export type ParseRequest = z.infer<typeof ParseRequest>;

/**
 * Several messages in one ask: one hand-over between threads per chunk
 * instead of per message, which is what keeps both pool threads busy.
 */
export const ParseBatchRequest = z.strictObject({
  type: z.literal('mime-parse.parse-batch'),
  account: z.string(),
  raws: z.array(Bytes).min(1).max(1_000),
});
export type ParseBatchRequest = z.infer<typeof ParseBatchRequest>;

/** Attachment positions (the stored attachment list's bound). */
export { MAX_ATTACHMENT_INDEX };

/**
 * One attachment of a raw message, decoded for a download: the `index`-th
 * entry of the same list a parse gives (`ParsedMessage.attachments`).
 */
export const ExtractAttachmentRequest = z.strictObject({
  type: z.literal('mime-parse.extract-attachment'),
  /** The whole raw message; moved, not copied, like `mime-parse.parse`. */
  raw: Bytes,
  /** Position in the message's attachment list, from 0. */
  index: z.number().int().nonnegative().max(MAX_ATTACHMENT_INDEX),
});
export type ExtractAttachmentRequest = z.infer<typeof ExtractAttachmentRequest>;

export const ParseMessage = z.discriminatedUnion('type', [ParseRequest, ParseBatchRequest, ExtractAttachmentRequest]);

/**
 * What a parse produces is what the store writes: the shapes are the store's
 * (runtime/store/mailbox/derived-message.ts), named here as the pool answers them.
 */
export const Address = StoredAddress;
export type Address = StoredAddress;
export const Attachment = StoredAttachment;
export type Attachment = StoredAttachment;
export const ParsedMessage = DerivedMessage;
export type ParsedMessage = DerivedMessage;

/**
 * Why a message is unreadable: `empty`, `no-header` (nothing at its top reads
 * as a header field), or `parser-failed` (the parser threw: a parser defect
 * the input exposed, never the input's fault).
 */
export const UnreadableReason = z.enum(['empty', 'no-header', 'parser-failed']);
export type UnreadableReason = z.infer<typeof UnreadableReason>;

/**
 * `unreadable`: the message could not be parsed at all; it is kept raw and
 * counted. For `parser-failed`, `errorClass` names what was thrown (its
 * constructor name, and its `code` when it has one: `RangeError`,
 * `TypeError:ERR_INVALID_ARG_TYPE`) and never its message, which may quote
 * the mail.
 */
export const ParseReply = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), message: ParsedMessage }),
  z.strictObject({ ok: z.literal(false), unreadable: z.literal(true), reason: UnreadableReason, errorClass: z.string().max(80).optional() }),
]);
export type ParseReply = z.infer<typeof ParseReply>;

export const ParseBatchReply = z.array(ParseReply);
export type ParseBatchReply = z.infer<typeof ParseBatchReply>;

export const ExtractedAttachment = z.strictObject({
  filename: z.string().nullable(),
  contentType: z.string(),
  /** Decoded bytes, moved back to the asker: a Buffer in the pool thread, a plain Uint8Array after crossing. */
  content: z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be bytes' }),
  /** SHA-256 (hex) of the encoded body: what the parse listed as this attachment's `sha256`. */
  encodedSha256: z.string(),
});
export type ExtractedAttachment = z.infer<typeof ExtractedAttachment>;

/** null: no attachment at that index, or a message the parser calls unreadable. */
export const ExtractAttachmentReply = ExtractedAttachment.nullable();
export type ExtractAttachmentReply = z.infer<typeof ExtractAttachmentReply>;

export type MimeParseProtocol = ProtocolOf<
  z.input<typeof ParseMessage>,
  { 'mime-parse.parse': ParseReply; 'mime-parse.parse-batch': ParseBatchReply; 'mime-parse.extract-attachment': ExtractAttachmentReply }
>;
