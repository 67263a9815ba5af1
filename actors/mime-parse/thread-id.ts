/**
 * The thread id: opaque and stable, 22 characters of base64url SHA-256 over
 * the account and the conversation's root, so threads never join across
 * accounts. The root is the first References id, else In-Reply-To, else the
 * message's own Message-ID, else a hash of its raw header bytes (a message
 * with no ids is a thread of its own).
 *
 * A reply that names only its parent (In-Reply-To without References) roots
 * at the parent, not at the conversation's first message; joining such
 * threads needs the store's view of other messages and is not done here.
 *
 * Private to actors/mime-parse/.
 */
import { createHash } from 'node:crypto';

export type ThreadInput = {
  references: string[];
  inReplyTo: string | null;
  messageId: string | null;
  /** The raw header bytes, used only when the message carries no id at all. */
  headerBytes: Uint8Array;
};

export function threadRoot(input: ThreadInput): string {
  const id = input.references[0] ?? input.inReplyTo ?? input.messageId;
  if (id !== null) return `id:${id}`;
  return `headers:${createHash('sha256').update(input.headerBytes).digest('hex')}`;
}

export function threadId(account: string, input: ThreadInput): string {
  return createHash('sha256').update(account).update('\0').update(threadRoot(input)).digest('base64url').slice(0, 22);
}
