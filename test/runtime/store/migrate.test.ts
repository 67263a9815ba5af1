import { join } from 'node:path';
import t from 'tap';
import { checkSequence, migrate } from '../../../runtime/store/migrate.ts';
import { migrations } from '../../../runtime/store/migrations/index.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { many, one, run } from '../../../runtime/store/rows.ts';
import { refusal, scratchDir } from './fixtures/scratch.ts';

const options = { busyTimeoutMs: 5000, synchronous: 'Full' } as const;
const newest = migrations.length;

function tables(db: Database): string[] {
  return many<{ name: string }>(
    db.prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"),
  ).map((row) => row.name);
}

t.test('migrations run 1, 2, 3… without gaps', async (t) => {
  checkSequence(migrations);
  t.ok(newest >= 1);
  t.equal(refusal(t, () => checkSequence([{ version: 2, name: 'skipped-one', sql: '' }]))?.code, 'E_STORE_MIGRATION');
});

t.test('a fresh database gets every migration, once', async (t) => {
  const db = openStore({ database: ':memory:', ...options });
  t.teardown(() => db.close());
  const first = migrate(db);
  t.same(first, { applied: migrations.map((m) => m.version), version: newest });
  const again = migrate(db);
  t.same(again, { applied: [], version: newest }, 'idempotent');
  const recorded = many<{ version: number; name: string }>(db.prepare('SELECT version, name FROM schema_version ORDER BY version'));
  t.same(
    recorded,
    migrations.map((m) => ({ version: m.version, name: m.name })),
  );
  for (const name of [
    'accounts',
    'folder_bindings',
    'checkpoints',
    'messages',
    'message_raw',
    'search_documents',
    'search_index',
    'search_keys',
    'passages',
    'repair_requests',
    'jobs',
    'assertion_replays',
    'mailbox_refresh_tokens',
    'mutation_audit',
    'answering_runs',
    'answering_reads',
    'sync_runs',
    'sync_folder_runs',
    'schema_version',
    'rederivation_runs',
    'deployment_secrets',
    'embedding_generations',
    'passage_vectors',
  ]) {
    t.ok(tables(db).includes(name), `${name} exists`);
  }
  t.same(many(db.prepare('PRAGMA foreign_key_check')), [], 'no dangling references');
  t.equal(one<{ integrity_check: string }>(db.prepare('PRAGMA integrity_check'))?.integrity_check, 'ok');
});

t.test('re-opening an existing database keeps its data and applies nothing', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const first = openStore({ database, ...options });
  t.equal(migrate(first).applied.length, newest);
  run(first.prepare('INSERT INTO accounts (id, created_at, updated_at) VALUES (?, ?, ?)'), ['alice', 1, 1]);
  first.close();

  const second = openStore({ database, ...options });
  t.teardown(() => second.close());
  t.same(migrate(second), { applied: [], version: newest });
  t.same(many(second.prepare('SELECT id FROM accounts')), [{ id: 'alice' }]);
});

t.test('a database newer than this build is refused, untouched', async (t) => {
  const db = openStore({ database: ':memory:', ...options });
  t.teardown(() => db.close());
  migrate(db);
  run(db.prepare('INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)'), [newest + 1, 'from-the-future', 1]);
  const err = refusal(t, () => migrate(db));
  t.equal(err?.code, 'E_STORE_MIGRATION');
  t.match(err?.message, `schema version ${newest + 1}, newer than this build knows (${newest})`);
  t.notOk(db.inTransaction, 'the migration transaction was rolled back');
});

t.test('a failing migration applies nothing, not even the ones before it in the same start', async (t) => {
  const db = openStore({ database: ':memory:', ...options });
  t.teardown(() => db.close());
  const broken = [...migrations, { version: newest + 1, name: 'broken', sql: 'CREATE TABLE fine (a INTEGER); CREATE TABLE accounts (b INTEGER);' }];
  const err = refusal(t, () => migrate(db, broken));
  t.equal(err?.code, 'E_STORE_MIGRATION');
  t.match(err?.message, `migration ${String(newest + 1).padStart(4, '0')}-broken failed`);
  t.match(err?.message, 'nothing was applied');
  t.same(tables(db), [], 'every migration of this start was rolled back, schema_version included');
  t.same(migrate(db).applied.length, newest, 'the good migrations still apply afterwards');
});

t.test('a database that belongs to something else is refused', async (t) => {
  const db = openStore({ database: ':memory:', ...options });
  t.teardown(() => db.close());
  db.exec('CREATE TABLE recipes (name TEXT)');
  const err = refusal(t, () => migrate(db));
  t.equal(err?.code, 'E_STORE_MIGRATION');
  t.match(err?.message, 'not a Mailcairn database');
  t.same(tables(db), ['recipes'], 'nothing was created');
});

t.test('two connections migrating the same file: one applies, the other finds nothing to do', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const a = openStore({ database, ...options });
  const b = openStore({ database, ...options });
  t.teardown(() => {
    a.close();
    b.close();
  });
  t.equal(migrate(a).applied.length, newest);
  t.same(migrate(b), { applied: [], version: newest });
});
