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

export type IndexState = {
  /** Messages held with raw MIME (stored or unreadable). */
  withRaw: number;
  /** Messages stored (readable or not derived yet). */
  stored: number;
  /** Stored messages not derived yet. */
  underived: number;
  /** Search documents, and how many of them belong to a row not derived or not stored (must be 0). */
  documents: number;
  strayDocuments: number;
  /** Rows of the received-time key table (one per document). */
  keys: number;
  /** Passages of a message parsed under another version, or of a row that has no document (must be 0). */
  strayPassages: number;
  /** FTS5's own check of the index against its content table (throws on mismatch). */
  ftsConsistent: boolean;
};

/** What the search side holds beside the mirror: a derived row has exactly one document, indexed once. */
export function indexState(database: string): IndexState {
  const db = new Libsql(database, { readonly: false });
  try {
    const count = (sql: string): number => Number((db.prepare(sql).get() as { n: number }).n);
    let ftsConsistent = true;
    try {
      db.exec("INSERT INTO search_index (search_index) VALUES ('integrity-check')");
    } catch {
      ftsConsistent = false;
    }
    return {
      withRaw: count("SELECT count(*) AS n FROM messages WHERE state IN ('stored', 'unreadable')"),
      stored: count("SELECT count(*) AS n FROM messages WHERE state = 'stored'"),
      underived: count("SELECT count(*) AS n FROM messages WHERE state = 'stored' AND parse_version IS NULL"),
      documents: count('SELECT count(*) AS n FROM search_documents'),
      strayDocuments: count(
        "SELECT count(*) AS n FROM search_documents d JOIN messages m ON m.id = d.message_id WHERE m.state <> 'stored' OR m.parse_version IS NULL",
      ),
      keys: count('SELECT count(*) AS n FROM search_keys'),
      strayPassages: count('SELECT count(*) AS n FROM passages p LEFT JOIN search_documents d ON d.message_id = p.message_id WHERE d.message_id IS NULL'),
      ftsConsistent,
    };
  } finally {
    db.close();
  }
}
