/** What the local mirror holds for one folder, in the shape the harness reads from the server, so the two compare directly. */
import { createHash } from 'node:crypto';
import Libsql from 'libsql';

export type MirroredMessage = { uid: number; flags: string[]; sha256: string };

export function readMirror(database: string, account: string, alias: string): MirroredMessage[] {
  const db = new Libsql(database, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT m.uid, m.flags, m.keywords, r.mime FROM messages m
         JOIN folder_bindings b ON b.id = m.binding_id
         LEFT JOIN message_raw r ON r.message_id = m.id
         WHERE m.account_id = ? AND b.alias = ? AND m.state <> 'tombstoned'
         ORDER BY m.uid`,
      )
      .all([account, alias]) as Array<{ uid: number; flags: string; keywords: string; mime: ArrayBuffer | null }>;
    return rows.map((r) => ({
      uid: Number(r.uid),
      flags: [...(JSON.parse(r.flags) as string[]), ...(JSON.parse(r.keywords) as string[])].sort(),
      sha256: r.mime ? createHash('sha256').update(Buffer.from(r.mime)).digest('hex') : '',
    }));
  } finally {
    db.close();
  }
}

/** Counts by state for one folder (tombstones included). */
export function mirrorStates(database: string, account: string, alias: string): Record<string, number> {
  const db = new Libsql(database, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT m.state, count(*) AS n FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
         WHERE m.account_id = ? AND b.alias = ? GROUP BY m.state`,
      )
      .all([account, alias]) as Array<{ state: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  } finally {
    db.close();
  }
}

/** Messages not tombstoned, across the database; 0 while it does not exist yet or is being migrated. */
export function storedCount(database: string): number {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 1_000 });
    try {
      return Number((db.prepare("SELECT count(*) AS n FROM messages WHERE state <> 'tombstoned'").get() as { n: number }).n);
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}
