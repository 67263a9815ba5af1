/**
 * A stored message read for a reply or a forward (the outbox's compose):
 * the properties the parse gives agents (parse-message.ts: addresses,
 * subject, message ids, references, date, the body text, HTML-only mail
 * reduced to text), so a reply quotes what `get_email` shows; and, when a
 * forward asks, its attachments decoded byte for byte by the decoder the
 * downloads use (attachment-content.ts `partContent`).
 *
 * A forward leaves out the images its HTML shows: an attachment part with a
 * Content-ID inside a multipart/related, which the forward's own body never
 * references. That is narrower than the listing's `inline` flag on purpose:
 * a photo or PDF a mailer sends with `Content-Disposition: inline` in a
 * multipart/mixed (Apple Mail does) is a file the reader was sent, and is
 * forwarded.
 *
 * Pure and synchronous. `readOriginal` never throws: null for a message the
 * parser calls unreadable (protocol.ts `UnreadableReason`). Loaded in place
 * by the outbox thread through `MIME_READ_ORIGINAL` (protocol.ts).
 */
import { partContent } from './attachment-content.ts';
import { attachmentParts, filenameOf } from './attachments.ts';
import { type Part, readMimeTree } from './mime-tree.ts';
import { parseMessage } from './parse-message.ts';
import type { OriginalAttachment, OriginalMessage } from './protocol.ts';

/** The thread id, the one property that depends on the account, is not read here. */
const NO_ACCOUNT = '';

export function readOriginal(raw: Uint8Array): OriginalMessage | null {
  const parsed = parseMessage(raw, NO_ACCOUNT);
  if (!parsed.ok) return null;
  const { messageId, references, subject, from, replyTo, to, cc, sentAt, bodyText } = parsed.message;
  return { messageId, references, subject, from, replyTo, to, cc, sentAt, bodyText, attachments: () => forwardedAttachments(raw) };
}

/** Every attachment but the images the HTML shows, in the listing's order, decoded. */
function forwardedAttachments(raw: Uint8Array): OriginalAttachment[] {
  // The same walk the parse above already made of these bytes, so it does not fail here either.
  const tree = readMimeTree(raw);
  const shown = shownByHtml(tree.root);
  return attachmentParts(tree.root)
    .filter((part) => !shown.has(part))
    .map((part) => ({ filename: filenameOf(part), contentType: part.contentType, content: partContent(tree.buf, part) }));
}

/** Leaves with a Content-ID below a multipart/related: what mailparser calls `related`, the HTML's embedded images. */
function shownByHtml(root: Part): Set<Part> {
  const shown = new Set<Part>();
  const visit = (part: Part, related: boolean): void => {
    if (part.children.length === 0) {
      if (related && part.hasContentId) shown.add(part);
      return;
    }
    for (const child of part.children) visit(child, related || part.contentType === 'multipart/related');
  };
  visit(root, false);
  return shown;
}
