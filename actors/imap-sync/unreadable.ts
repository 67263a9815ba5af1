/**
 * Unreadable mail, as the account's sync actor reports it. The parse pool
 * answers why a message is unreadable (`reason`, and for a parser that threw
 * the error's class); this turns that into one log line per message and a
 * count per class, so a parser regression shows as a rising
 * `parser-failed:<class>` count instead of quietly growing the unreadable
 * total. Lines carry identities (folder alias, UID or stored id) and
 * classes, never the message, its headers or the thrown error's text.
 *
 * Importable by the sync actor's modules only.
 */
import type { Logger } from '../../runtime/log.ts';
import type { ParseReply } from '../mime-parse/protocol.ts';

/** Counts by class: `empty`, `no-header`, `parser-failed:<class>`, `no-reply`. */
export type UnreadableCounts = Record<string, number>;

/** The class a reply is counted under; a missing reply (the pool answered short) is `no-reply`. */
export function unreadableClass(reply: ParseReply | null | undefined): string {
  if (!reply || reply.ok) return 'no-reply';
  return reply.reason === 'parser-failed' ? `parser-failed:${reply.errorClass ?? 'unknown'}` : reply.reason;
}

/**
 * One line for one unreadable message, and its count. A parser that threw is
 * a defect worth an operator's eye (warn); an empty or header-less message is
 * the mail's own state (info).
 */
export function noteUnreadable(log: Logger, counts: UnreadableCounts, reply: ParseReply | null | undefined, where: Record<string, string | number>): void {
  const unreadable = unreadableClass(reply);
  counts[unreadable] = (counts[unreadable] ?? 0) + 1;
  const failed = reply && !reply.ok && reply.reason === 'parser-failed';
  const fields = {
    event: 'sync.unreadable',
    ...where,
    reason: reply && !reply.ok ? reply.reason : 'no-reply',
    errorClass: failed ? (reply.errorClass ?? 'unknown') : null,
  };
  if (failed || !reply) log.warn(fields, 'sync.unreadable');
  else log.info(fields, 'sync.unreadable');
}
