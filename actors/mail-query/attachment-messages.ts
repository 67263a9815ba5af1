/**
 * The pool message `mail-query.attachment` (`AttachmentSourceRequest` in,
 * `AttachmentSourceReply` out): the stored source of one attachment link,
 * for the main thread to hand to the parse pool
 * (`mime-parse.extract-attachment`), which decodes it. Schemas only, so that
 * protocol.ts carries them without loading the handler (attachment.ts) and
 * the database driver.
 */
import { z } from 'zod';
import { MAX_ATTACHMENT_INDEX } from '../mime-parse/protocol.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';

export { MAX_ATTACHMENT_INDEX };

export const AttachmentSourceRequest = z.strictObject({
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
export type AttachmentSourceRequest = z.infer<typeof AttachmentSourceRequest>;

export const StoredAttachmentSource = z.strictObject({
  /** The message's whole raw MIME, checked against its stored SHA-256. A Buffer here; a plain Uint8Array after crossing a thread. */
  raw: z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be bytes' }),
  /**
   * SHA-256 (hex) of the encoded body listed at `index` in the stored
   * attachment list (what agents were shown); null while the message is not
   * derived yet, so there is no list to hold the parser to.
   */
  listedSha256: z.string().nullable(),
});
export type StoredAttachmentSource = z.infer<typeof StoredAttachmentSource>;

/** null: nothing to serve (see attachment.ts for every reason). */
export const AttachmentSourceReply = StoredAttachmentSource.nullable();
export type AttachmentSourceReply = z.infer<typeof AttachmentSourceReply>;
