import t from 'tap';
import { setBindingPath, syncBindings } from '../../../../runtime/store/mailbox/bindings.ts';
import { many } from '../../../../runtime/store/rows.ts';
import { freshStore } from './helpers.ts';

t.test('one binding per configured alias; unresolved aliases have no path', async (t) => {
  const db = freshStore(t);
  const bindings = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'lists', path: null },
    ],
    10,
  );
  t.match(bindings, [
    { accountId: 'alice', alias: 'inbox', path: 'INBOX', mirrored: true, generation: 1 },
    { accountId: 'alice', alias: 'lists', path: null, mirrored: true, generation: 1 },
  ]);
  t.same(
    syncBindings(
      db,
      'alice',
      [
        { alias: 'inbox', path: 'INBOX' },
        { alias: 'lists', path: null },
      ],
      20,
    ),
    bindings,
    'idempotent',
  );
  t.same(syncBindings(db, 'bob', [], 20), [], 'another account holds none');
});

t.test('an alias dropped from the configuration is kept and marked not mirrored; adding it back mirrors it again', async (t) => {
  const db = freshStore(t);
  const [inbox] = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'old', path: 'Old' },
    ],
    10,
  );
  const after = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 20);
  t.match(after, [
    { alias: 'inbox', mirrored: true, id: inbox!.id },
    { alias: 'old', mirrored: false, path: 'Old' },
  ]);
  t.match(
    syncBindings(
      db,
      'alice',
      [
        { alias: 'inbox', path: 'INBOX' },
        { alias: 'old', path: 'Old' },
      ],
      30,
    ),
    [{ alias: 'inbox' }, { alias: 'old', mirrored: true, generation: 1 }],
  );
});

t.test('an alias resolving to another folder starts a new generation; the old one is retired with its mail', async (t) => {
  const db = freshStore(t);
  const [first] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 10);
  const [unresolved] = syncBindings(db, 'alice', [{ alias: 'inbox', path: null }], 20);
  t.match(unresolved, { id: first!.id, path: null, generation: 1 }, 'unresolved for a while: same generation');
  const [back] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 30);
  t.match(back, { id: first!.id, path: 'INBOX', generation: 1 }, 'back on the same folder: resumes');
  const [moved] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'Mail/Inbox' }], 40);
  t.match(moved, { alias: 'inbox', path: 'Mail/Inbox', generation: 2, mirrored: true });
  t.not(moved!.id, first!.id);
  t.same(many(db.prepare('SELECT generation, remote_path, mirrored, retired_at FROM folder_bindings WHERE alias = ? ORDER BY generation'), ['inbox']), [
    { generation: 1, remote_path: 'INBOX', mirrored: 0, retired_at: 40 },
    { generation: 2, remote_path: 'Mail/Inbox', mirrored: 1, retired_at: null },
  ]);
});

t.test('setBindingPath resolves, unresolves and moves one binding', async (t) => {
  const db = freshStore(t);
  const [lists] = syncBindings(db, 'alice', [{ alias: 'lists', path: null }], 10);
  const resolved = setBindingPath(db, lists!.id, 'Lists', 20);
  t.match(resolved, { id: lists!.id, path: 'Lists', generation: 1 }, 'a never-resolved binding takes the path');
  t.match(setBindingPath(db, lists!.id, null, 30), { id: lists!.id, path: null });
  const moved = setBindingPath(db, lists!.id, 'Lists2', 40);
  t.match(moved, { path: 'Lists2', generation: 2 });
  t.throws(() => setBindingPath(db, lists!.id, 'Lists3', 50), /retired/, 'a retired generation is not moved again');
});

t.test('an account the boot did not reconcile is created rather than failing', async (t) => {
  const db = freshStore(t);
  t.match(syncBindings(db, 'carol', [{ alias: 'inbox', path: 'INBOX' }], 10), [{ accountId: 'carol', alias: 'inbox' }]);
  t.same(many(db.prepare("SELECT id, configured FROM accounts WHERE id = 'carol'")), [{ id: 'carol', configured: 1 }]);
});
