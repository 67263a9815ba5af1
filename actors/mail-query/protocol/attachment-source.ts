/**
 * The query pool's contract with the attachment download route: the message
 * `mail-query.attachment` (`AttachmentSourceRequest` in,
 * `AttachmentSourceReply` out), the stored source of one attachment link,
 * for the main thread to hand to the parse pool
 * (`mime-parse.extract-attachment`), which decodes it. Schemas only; the
 * handler is ../attachment.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { MAX_ATTACHMENT_INDEX } from '../../../runtime/store/mailbox/derived-message.ts';

export const AttachmentSourceRequest = z.strictObject({
  type: z.literal('mail-query.attachment'),
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

export type AttachmentSourceProtocol = ProtocolOf<z.input<typeof AttachmentSourceRequest>, { 'mail-query.attachment': AttachmentSourceReply }>;
