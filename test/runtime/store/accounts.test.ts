import t from 'tap';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { many } from '../../../runtime/store/rows.ts';

t.test('accounts follow the configuration; withdrawn ones stay, marked', async (t) => {
  const db = openStore({ database: ':memory:', busyTimeoutMs: 0, synchronous: 'Full' });
  t.teardown(() => db.close());
  migrate(db);
  const rows = () => many(db.prepare('SELECT id, configured, created_at, updated_at FROM accounts ORDER BY id'));

  t.same(reconcileAccounts(db, ['alice', 'bob'], 10), { added: ['alice', 'bob'], withdrawn: [] });
  t.same(reconcileAccounts(db, ['alice', 'bob'], 20), { added: [], withdrawn: [] }, 'idempotent');
  t.same(reconcileAccounts(db, ['alice'], 30), { added: [], withdrawn: ['bob'] });
  t.same(rows(), [
    { id: 'alice', configured: 1, created_at: 10, updated_at: 10 },
    { id: 'bob', configured: 0, created_at: 10, updated_at: 30 },
  ]);
  t.same(reconcileAccounts(db, ['alice', 'bob'], 40), { added: [], withdrawn: [] }, 'a returning account is not new');
  t.match(rows(), [{ id: 'alice' }, { id: 'bob', configured: 1, updated_at: 40 }]);
});
