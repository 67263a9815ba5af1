/**
 * A sender's mail by the `message_senders` key (migration 19): one range of
 * it holds every message with that From address, whatever its folder or
 * state (only mail with a parsed From has rows, so tombstoned, oversized
 * and unreadable mail never does). A domain filter has no range there and
 * reads the messages as before.
 *
 * Importable by modules of `actors/mail-query/` only.
 */
import type { Database } from '../../runtime/store/open.ts';
import { asciiLower } from './filters.ts';
import { prepared } from './statements.ts';

/** The address a `senderAddress` filter names exactly, folded as the key holds it; null for none or a domain. */
export function exactSender(filter: string | undefined): string | null {
  return filter === undefined || filter.startsWith('@') ? null : asciiLower(filter);
}

/** Ids of the sender's mail, at most `atMost` + 1 (more tells the caller to go the other way), in key order. */
export function sentBy(db: Database, address: string, atMost: number): number[] {
  const rows = prepared(db, 'SELECT message_id AS id FROM message_senders WHERE address = ? LIMIT ?').all([address, atMost + 1]) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}
