import { createHash } from 'node:crypto';
import t from 'tap';
import { migrate } from '../../../runtime/store/migrate.ts';
import { migrations } from '../../../runtime/store/migrations/index.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { many, one, run, type SqlValue } from '../../../runtime/store/rows.ts';

function fresh(t: { teardown(fn: () => unknown): void }): Database {
  const db = openStore({ database: ':memory:', busyTimeoutMs: 1000, synchronous: 'Full' });
  t.teardown(() => db.close());
  migrate(db);
  run(db.prepare("INSERT INTO accounts (id, created_at, updated_at) VALUES ('alice', 1, 1)"));
  run(db.prepare("INSERT INTO folder_bindings (account_id, alias, generation, remote_path, created_at) VALUES ('alice', 'inbox', 1, 'INBOX', 1)"));
  return db;
}

function storeMessage(db: Database, uid: number, text: { subject: string; body: string; from?: string }): number {
  const mime = Buffer.from(`Subject: ${text.subject}\r\n\r\n${text.body}`);
  const id = Number(
    run(
      db.prepare(
        `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, internal_date, size, subject, from_json, parse_version, stored_at, updated_at)
         VALUES ('alice', 1, 7, ?, 'stored', ?, ?, ?, ?, 1, ?, ?)`,
      ),
      [uid, 1000 + uid, mime.length, text.subject, JSON.stringify([{ address: text.from ?? 'a@example.org' }]), 1, 1],
    ).lastInsertRowid,
  );
  run(db.prepare('INSERT INTO message_raw (message_id, mime, sha256, stored_at) VALUES (?, ?, ?, ?)'), [
    id,
    mime,
    createHash('sha256').update(mime).digest(),
    1,
  ]);
  run(db.prepare('INSERT INTO search_documents (message_id, subject, from_text, body_text) VALUES (?, ?, ?, ?)'), [
    id,
    text.subject,
    text.from ?? 'a@example.org',
    text.body,
  ]);
  run(db.prepare('INSERT INTO passages (message_id, ordinal, text, parse_version) VALUES (?, 0, ?, 1)'), [id, text.body]);
  return id;
}

function search(db: Database, query: string): number[] {
  return many<{ id: number }>(
    db.prepare('SELECT k.message_id AS id FROM search_index CROSS JOIN search_keys k ON k.key = search_index.rowid WHERE search_index MATCH ? ORDER BY rank'),
    [query],
  ).map((row) => row.id);
}

function count(db: Database, table: string, where = '1', params: SqlValue[] = []): number {
  return one<{ n: number }>(db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`), params)?.n ?? -1;
}

t.test('the FTS5 index follows the search documents: insert, update, delete, cascade', async (t) => {
  const db = fresh(t);
  const invoice = storeMessage(db, 1, { subject: 'Invoice for März', body: 'Please pay the invoice by Friday' });
  const lunch = storeMessage(db, 2, { subject: 'Lunch?', body: 'Café on the corner at noon', from: 'bob@example.org' });
  t.same(search(db, 'invoice'), [invoice]);
  t.same(search(db, 'cafe'), [lunch], 'diacritics are folded');
  t.same(search(db, 'marz'), [invoice]);
  t.same(search(db, 'from_text:bob'), [lunch], 'columns are searchable by name');

  run(db.prepare("UPDATE search_documents SET body_text = 'Sandwiches at noon' WHERE message_id = ?"), [lunch]);
  t.same(search(db, 'cafe'), [], 'the old text left the index');
  t.same(search(db, 'sandwiches'), [lunch]);

  run(db.prepare('DELETE FROM messages WHERE id = ?'), [invoice]);
  t.same(search(db, 'invoice'), [], 'a cascade delete takes the document out of the index');
  t.equal(count(db, 'message_raw', 'message_id = ?', [invoice]), 0, 'raw MIME went with the message');
  t.equal(count(db, 'passages', 'message_id = ?', [invoice]), 0, 'passages went with the message');
  db.exec("INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)");
  db.exec("INSERT INTO search_headings (search_headings, rank) VALUES ('integrity-check', 1)");
  t.equal(count(db, 'search_keys'), count(db, 'search_documents'), 'one search key per document');
  t.pass('both indexes agree with their content');
});

t.test('a tombstone keeps identity only', async (t) => {
  const db = fresh(t);
  const id = storeMessage(db, 1, { subject: 'Secret plans', body: 'The plans are secret' });
  t.throws(
    () => run(db.prepare("UPDATE messages SET state = 'tombstoned', tombstoned_at = 5 WHERE id = ?"), [id]),
    { code: 'SQLITE_CONSTRAINT_CHECK' },
    'a tombstone that still carries a subject is refused',
  );
  const tombstone = db.transaction(() => {
    run(db.prepare('DELETE FROM message_raw WHERE message_id = ?'), [id]);
    run(db.prepare('DELETE FROM search_documents WHERE message_id = ?'), [id]);
    run(db.prepare('DELETE FROM passages WHERE message_id = ?'), [id]);
    run(
      db.prepare(
        `UPDATE messages SET state = 'tombstoned', tombstoned_at = 5, tombstone_reason = 'expunged', subject = NULL, from_json = NULL,
         parse_version = NULL, updated_at = 5 WHERE id = ?`,
      ),
      [id],
    );
  });
  tombstone();
  t.match(one(db.prepare('SELECT state, uid, uidvalidity, subject FROM messages WHERE id = ?'), [id]), {
    state: 'tombstoned',
    uid: 1,
    uidvalidity: 7,
    subject: null,
  });
  t.same(search(db, 'secret'), []);
  t.throws(
    () => run(db.prepare("UPDATE messages SET state = 'stored' WHERE id = ?"), [id]),
    { code: 'SQLITE_CONSTRAINT_CHECK' },
    'state and tombstoned_at agree',
  );
});

t.test("message_senders holds each message's From addresses, folded, through every write of from_json", async (t) => {
  const db = openStore({ database: ':memory:', busyTimeoutMs: 1000, synchronous: 'Full' });
  t.teardown(() => db.close());
  // Mail stored before migration 19 is filled in when it applies.
  migrate(
    db,
    migrations.filter((m) => m.version < 19),
  );
  run(db.prepare("INSERT INTO accounts (id, created_at, updated_at) VALUES ('alice', 1, 1)"));
  run(db.prepare("INSERT INTO folder_bindings (account_id, alias, generation, remote_path, created_at) VALUES ('alice', 'inbox', 1, 'INBOX', 1)"));
  const store = (uid: number, from: Array<{ address: string }> | null) =>
    Number(
      run(
        db.prepare(
          `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, internal_date, from_json, parse_version, stored_at, updated_at)
           VALUES ('alice', 1, 7, ?, 'stored', 1, ?, ?, 1, 1)`,
        ),
        [uid, from === null ? null : JSON.stringify(from), from === null ? null : 1],
      ).lastInsertRowid,
    );
  const senders = () =>
    many<{ address: string; message_id: number }>(db.prepare('SELECT address, message_id FROM message_senders ORDER BY message_id, address'));
  const old = store(1, [{ address: 'Billing@Vendor.Example' }, { address: 'cfo@vendor.example' }]);
  const underived = store(2, null);
  migrate(db);
  t.same(senders(), [
    { address: 'billing@vendor.example', message_id: old },
    { address: 'cfo@vendor.example', message_id: old },
  ]);

  const group = store(3, [{ address: '' }, { address: 'bob@example.org' }, { address: 'BOB@example.org' }]);
  t.same(
    senders().filter((r) => r.message_id === group),
    [{ address: 'bob@example.org', message_id: group }],
    'an inserted message: the empty address left out, one row for an address written twice',
  );
  run(db.prepare('UPDATE messages SET from_json = ? WHERE id = ?'), [JSON.stringify([{ name: 'Carol', address: 'carol@example.org' }]), underived]);
  run(db.prepare('UPDATE messages SET from_json = ? WHERE id = ?'), [JSON.stringify([{ address: 'cfo@vendor.example' }]), old]);
  t.same(
    senders(),
    [
      { address: 'cfo@vendor.example', message_id: old },
      { address: 'carol@example.org', message_id: underived },
      { address: 'bob@example.org', message_id: group },
    ],
    'derived later, or re-derived with another From: the rows follow',
  );
  run(db.prepare('UPDATE messages SET flags = \'["\\\\Seen"]\' WHERE id = ?'), [old]);
  run(
    db.prepare(
      "UPDATE messages SET state = 'tombstoned', tombstoned_at = 5, tombstone_reason = 'expunged', from_json = NULL, parse_version = NULL WHERE id = ?",
    ),
    [group],
  );
  run(db.prepare('DELETE FROM messages WHERE id = ?'), [underived]);
  t.same(senders(), [{ address: 'cfo@vendor.example', message_id: old }], 'a tombstone and an erasure take their rows; a flag change keeps them');
  t.equal(one<{ integrity_check: string }>(db.prepare('PRAGMA integrity_check'))?.integrity_check, 'ok');
});

t.test('local ids are never reused, so a storedEmailId stays unambiguous', async (t) => {
  const db = fresh(t);
  const first = storeMessage(db, 1, { subject: 'a', body: 'a' });
  run(db.prepare('DELETE FROM messages WHERE id = ?'), [first]);
  const second = storeMessage(db, 2, { subject: 'b', body: 'b' });
  t.ok(second > first);
  t.throws(() => storeMessage(db, 2, { subject: 'dup', body: 'dup' }), { code: 'SQLITE_CONSTRAINT_UNIQUE' }, 'one row per (binding, uidvalidity, uid)');
});

t.test('raw MIME round-trips byte for byte', async (t) => {
  const db = fresh(t);
  const id = storeMessage(db, 1, { subject: 'bytes', body: 'x' });
  const binary = Buffer.from([0, 1, 2, 0xff, 0xfe, 13, 10]);
  run(db.prepare('UPDATE message_raw SET mime = ?, sha256 = ? WHERE message_id = ?'), [binary, createHash('sha256').update(binary).digest(), id]);
  const row = one<{ mime: Buffer; sha256: Buffer }>(db.prepare('SELECT mime, sha256 FROM message_raw WHERE message_id = ?'), [id]);
  t.ok(row !== undefined && Buffer.compare(row.mime, binary) === 0);
  t.equal(row?.sha256.length, 32);
});

t.test('one live job per idempotency key; dead letters keep their identity; done frees the key', async (t) => {
  const db = fresh(t);
  const enqueue = db.prepare(
    "INSERT INTO jobs (type, account_id, idempotency_key, payload, state, enqueued_at, due_at) VALUES ('rederive', 'alice', ?, '{}', 'queued', 1, 1)",
  );
  const id = Number(run(enqueue, ['rederive:alice']).lastInsertRowid);
  t.throws(() => run(enqueue, ['rederive:alice']), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
  run(db.prepare("UPDATE jobs SET state = 'dead', dead_lettered_at = 2, failure_class = 'permanent', failure_code = 'E_INTERNAL' WHERE id = ?"), [id]);
  t.throws(() => run(enqueue, ['rederive:alice']), { code: 'SQLITE_CONSTRAINT_UNIQUE' }, 'a dead letter still holds its key, for retry');
  run(db.prepare("UPDATE jobs SET state = 'queued' WHERE id = ?"), [id]);
  run(db.prepare("UPDATE jobs SET state = 'done', ended_at = 3 WHERE id = ?"), [id]);
  t.ok(Number(run(enqueue, ['rederive:alice']).lastInsertRowid) > id, 'a new run of the same scope may start');
  t.throws(() => run(db.prepare("UPDATE jobs SET state = 'dropped' WHERE id = ?"), [id]), { code: 'SQLITE_CONSTRAINT_CHECK' }, 'dropped needs dropped_at');
  t.throws(() => run(db.prepare("UPDATE jobs SET payload = 'not json' WHERE id = ?"), [id]), { code: 'SQLITE_CONSTRAINT_CHECK' });
});

t.test('audits: the mutation trail survives the mail; erasing a message erases it from answering runs', async (t) => {
  const db = fresh(t);
  const id = storeMessage(db, 1, { subject: 's', body: 'b' });
  run(
    db.prepare(
      `INSERT INTO mutation_audit (account_id, mutation, message_id, source_path, uidvalidity, source_uid, requester, requested_at, ended_at, outcome)
       VALUES ('alice', 'set-seen', ?, 'INBOX', 7, 1, 'agent-key', 1, 2, 'applied')`,
    ),
    [id],
  );
  const runId = Number(
    run(
      db.prepare(
        "INSERT INTO answering_runs (run_id, account_id, endpoint_alias, instruction_version, began_at, ended_at, ending) VALUES ('r1', 'alice', 'chat', 'v1', 1, 2, 'answered')",
      ),
    ).lastInsertRowid,
  );
  run(db.prepare('INSERT INTO answering_reads (answering_run_id, position, message_id, cited) VALUES (?, 0, ?, 1)'), [runId, id]);
  run(db.prepare("INSERT INTO repair_requests (message_id, account_id, reason, requested_at) VALUES (?, 'alice', 'damaged', 1)"), [id]);
  t.throws(
    () => run(db.prepare("INSERT INTO repair_requests (message_id, account_id, reason, requested_at) VALUES (?, 'alice', 'missing', 2)"), [id]),
    { code: 'SQLITE_CONSTRAINT_UNIQUE' },
    'one open repair request per message',
  );

  run(db.prepare('DELETE FROM messages WHERE id = ?'), [id]);
  t.equal(count(db, 'mutation_audit'), 1, 'the mutation audit survives');
  t.equal(count(db, 'answering_runs'), 1, 'the run stays');
  t.equal(count(db, 'answering_reads'), 0, 'the erased message is gone from it');
  t.equal(count(db, 'repair_requests'), 0, 'outstanding repair requests go with the mail');
});

t.test('sync run records hold what the synchronization status shows', async (t) => {
  const db = fresh(t);
  const runId = Number(run(db.prepare("INSERT INTO sync_runs (account_id, started_at) VALUES ('alice', 10)")).lastInsertRowid);
  run(
    db.prepare(
      `INSERT INTO sync_folder_runs (sync_run_id, binding_id, started_at, ended_at, outcome, stored_count, oversized_count, unreadable_count, has_more)
       VALUES (?, 1, 10, 20, 'ok', 200, 1, 2, 1)`,
    ),
    [runId],
  );
  run(db.prepare("UPDATE sync_runs SET ended_at = 21, outcome = 'ok', consecutive_failures = 0, next_due_at = 300 WHERE id = ?"), [runId]);
  run(db.prepare('INSERT INTO checkpoints (binding_id, uidvalidity, highest_uid, highest_modseq, advanced_at) VALUES (1, 7, 200, ?, 20)'), [2n ** 62n]);
  const status = one(
    db.prepare(
      `SELECT b.alias, c.uid_validity, c.highest_uid, f.stored_count, f.oversized_count, f.unreadable_count, f.has_more, r.next_due_at
       FROM folder_bindings b JOIN (SELECT binding_id, uidvalidity AS uid_validity, highest_uid FROM checkpoints) c ON c.binding_id = b.id
       JOIN sync_folder_runs f ON f.binding_id = b.id JOIN sync_runs r ON r.id = f.sync_run_id`,
    ),
  );
  t.same(status, {
    alias: 'inbox',
    uid_validity: 7,
    highest_uid: 200,
    stored_count: 200,
    oversized_count: 1,
    unreadable_count: 2,
    has_more: 1,
    next_due_at: 300,
  });
  const modseq = db.prepare('SELECT highest_modseq FROM checkpoints WHERE binding_id = 1').safeIntegers(true);
  t.equal(one<{ highest_modseq: bigint }>(modseq)?.highest_modseq, 2n ** 62n, 'a 63-bit modseq survives when read with safeIntegers');
});

t.test('foreign keys are enforced', async (t) => {
  const db = fresh(t);
  t.throws(
    () =>
      run(
        db.prepare("INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, stored_at, updated_at) VALUES ('alice', 99, 1, 1, 'stored', 1, 1)"),
      ),
    { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
  );
});
