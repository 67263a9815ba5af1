/**
 * One raw message to the properties agents need (protocol.ts `ParseReply`):
 * pure, synchronous, and never throws.
 *
 * Built for the initial mirror's speed: the MIME structure is walked as byte
 * ranges (mime-tree.ts), only the chosen text/plain or text/html parts are
 * decoded (body-text.ts), and attachments are counted, sized from their
 * encoded length and hashed over their encoded bytes, never decoded
 * (attachments.ts).
 *
 * Unreadable (`{ ok: false, unreadable: true, reason }`, the raw bytes are
 * kept, counted and logged by the caller): an empty message (`empty`), one
 * with no header field at all at its top, after an optional mbox `From `
 * line (`no-header`), or one whose parsing threw (`parser-failed`, with the
 * error's class so a parser regression shows in the logs; never its message,
 * which may quote the mail). Everything else parses best-effort: broken
 * boundaries, missing or garbled Content-Type, bad charsets and bad dates
 * leave the affected property empty or defaulted, not the message unread.
 *
 * Importable by the parse pool task (task.ts), tests and benches.
 */
import { errorClass } from '../../runtime/error-class.ts';
import { addresses } from './addresses.ts';
import { listAttachments } from './attachments.ts';
import { bodyText } from './body-text.ts';
import { sentAt } from './date.ts';
import { first, type HeaderFields } from './header-block.ts';
import { messageIds, ownId, references, subject } from './header-values.ts';
import { readMimeTree } from './mime-tree.ts';
import { passages } from './passages.ts';
import { PARSE_VERSION, type ParseReply } from './protocol.ts';
import { threadId } from './thread-id.ts';

const EMPTY: ParseReply = { ok: false, unreadable: true, reason: 'empty' };
const NO_HEADER: ParseReply = { ok: false, unreadable: true, reason: 'no-header' };

function joined(fields: HeaderFields, name: string): string | null {
  const values = fields.get(name);
  return values ? values.join(' ') : null;
}

/** Precedence values of mail sent in bulk (RFC 2076; `junk` is what vacation responders set). */
const BULK_PRECEDENCE = /^\s*(?:bulk|list|junk)\s*$/i;

/** Mailing-list or machine mail (DerivedMessage `bulk`): what contact collection leaves out. */
function isBulk(fields: HeaderFields): boolean {
  if (fields.has('list-id') || fields.has('list-unsubscribe')) return true;
  const precedence = first(fields, 'precedence');
  if (precedence !== null && BULK_PRECEDENCE.test(precedence)) return true;
  const submitted = first(fields, 'auto-submitted');
  return submitted !== null && !/^\s*no\s*(?:;|$)/i.test(submitted);
}

export function parseMessage(raw: Uint8Array, account: string): ParseReply {
  try {
    if (raw.byteLength === 0) return EMPTY;
    const tree = readMimeTree(raw);
    const fields = tree.top.fields;
    if (tree.top.count === 0) return NO_HEADER;
    const hint = tree.hint;
    const messageId = ownId(first(fields, 'message-id'));
    const inReplyTo = messageIds(first(fields, 'in-reply-to'))[0] ?? null;
    const refs = references(joined(fields, 'references'));
    const text = bodyText(tree.buf, tree.root);
    const headerBytes = tree.buf.subarray(tree.headerStart, tree.top.bodyStart);
    return {
      ok: true,
      message: {
        parseVersion: PARSE_VERSION,
        messageId,
        inReplyTo,
        references: refs,
        threadId: threadId(account, { references: refs, inReplyTo, messageId, headerBytes }),
        subject: subject(fields.get('subject'), hint),
        from: addresses(fields.get('from'), hint),
        sender: addresses(fields.get('sender'), hint),
        replyTo: addresses(fields.get('reply-to'), hint),
        to: addresses(fields.get('to'), hint),
        cc: addresses(fields.get('cc'), hint),
        bcc: addresses(fields.get('bcc'), hint),
        bulk: isBulk(fields),
        sentAt: sentAt(first(fields, 'date')),
        attachments: listAttachments(tree.buf, tree.root),
        bodyText: text,
        passages: passages(text),
      },
    };
  } catch (err) {
    // Never a crash: whatever slipped past the tolerant readers makes the message unreadable,
    // and says what was thrown so the caller's log shows a parser regression.
    return { ok: false, unreadable: true, reason: 'parser-failed', errorClass: errorClass(err) };
  }
}
