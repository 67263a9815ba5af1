/**
 * The derived properties of a stored message, as the store writes them
 * (derived.ts, store-batch.ts, rederivation.ts): the store owns this shape.
 * The MIME parse pool produces it (actors/mime-parse/protocol.ts names it
 * `ParsedMessage`); a change here is a change of what is stored, and of
 * PARSE_VERSION when stored mail must be derived again.
 */
import { z } from 'zod';

export const StoredAddress = z.strictObject({ name: z.string(), address: z.string() });
export type StoredAddress = z.infer<typeof StoredAddress>;

/**
 * Positions in a message's attachment list: the parser reads at most 500
 * parts per message, so 65 535 bounds any index (what a download link or a
 * decode may name).
 */
export const MAX_ATTACHMENT_INDEX = 65_535;

export const StoredAttachment = z.strictObject({
  filename: z.string().nullable(),
  contentType: z.string(),
  /** Decoded size estimated from the encoded length (payloads are never decoded). */
  size: z.number().int().nonnegative(),
  /** SHA-256 (hex) of the part's encoded body: identifies it without decoding it. */
  sha256: z.string(),
  inline: z.boolean(),
});
export type StoredAttachment = z.infer<typeof StoredAttachment>;

export const DerivedMessage = z.strictObject({
  parseVersion: z.number().int(),
  messageId: z.string().nullable(),
  inReplyTo: z.string().nullable(),
  references: z.array(z.string()),
  /** Opaque, stable: derived from the conversation's root Message-ID (or the message's own identity). */
  threadId: z.string(),
  subject: z.string().nullable(),
  from: z.array(StoredAddress),
  sender: z.array(StoredAddress),
  replyTo: z.array(StoredAddress),
  to: z.array(StoredAddress),
  cc: z.array(StoredAddress),
  /** Bcc, which only a sent copy carries (not stored; contact collection reads it: docs/contacts.md "Collection"). */
  bcc: z.array(StoredAddress),
  /**
   * Mailing-list or machine mail: a List-Id or List-Unsubscribe header,
   * Precedence bulk, list or junk, or Auto-Submitted other than `no` (RFC
   * 3834). Not stored; contact collection skips such mail.
   */
  bulk: z.boolean(),
  /** Date header, epoch ms, or null when absent or unreadable. */
  sentAt: z.number().nullable(),
  attachments: z.array(StoredAttachment),
  /** Readable body: text/plain, or HTML reduced to text. */
  bodyText: z.string(),
  /** Passages of the body for later embedding, in order. */
  passages: z.array(z.string()),
});
export type DerivedMessage = z.infer<typeof DerivedMessage>;
