/**
 * The pool message `mail-query.attachment` (`AttachmentRequest` in,
 * `AttachmentReply` out): schemas only, so that protocol.ts carries them
 * without loading the handler (attachment.ts) and its MIME decoding.
 */
import { z } from 'zod';
import { StoreSlice } from '../../runtime/store/store-slice.ts';

/** Attachment positions: the parser reads at most 500 parts per message, so 65 535 bounds any index. */
export const MAX_ATTACHMENT_INDEX = 65_535;

export const AttachmentRequest = z.strictObject({
  type: z.literal('mail-query.attachment'),
  /** As on every mail-query message: the pool thread opens its one connection from it on first use. */
  store: StoreSlice,
  /** `messages.id`, the local key a storedEmailId is built over. */
  messageId: z.number().int().positive(),
  /** Position in the message's attachment list, from 0. */
  index: z.number().int().nonnegative().max(MAX_ATTACHMENT_INDEX),
  /** Accounts the caller may read; a message of any other account is not found. */
  accounts: z.array(z.string()),
});
export type AttachmentRequest = z.infer<typeof AttachmentRequest>;

export const AttachmentFound = z.strictObject({
  filename: z.string().nullable(),
  contentType: z.string(),
  /** Decoded bytes. A Buffer here; a plain Uint8Array after crossing a thread. */
  content: z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be bytes' }),
});
export type AttachmentFound = z.infer<typeof AttachmentFound>;

/** null: nothing to serve (see the header for every reason). */
export const AttachmentReply = AttachmentFound.nullable();
export type AttachmentReply = z.infer<typeof AttachmentReply>;
