/**
 * Administrative page cursors: bound to their route and filters (only
 * pageSize may change), refused when another deployment (another key) issued
 * them or when altered, and resuming exactly where the page ended.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createCursors, NOT_ISSUED_HERE, OTHER_FILTERS } from '../../../http/admin/cursor.ts';

t.test('bound to route, filters and deployment', async (t) => {
  const ours = createCursors(randomBytes(32));
  const theirs = createCursors(randomBytes(32));
  const route = '/api/admin/mailbox/mutations/audit';
  const filters = { account: 'pat', mutation: 'delete', pageSize: 50 };
  const cursor = ours.issue(route, filters, [1_700_000_000_000, 42]);

  t.same(ours.read(route, filters, cursor), [1_700_000_000_000, 42], 'resumes where the page ended');
  t.same(ours.read(route, { ...filters, pageSize: 7 }, cursor), [1_700_000_000_000, 42], 'pageSize may change');
  t.same(
    ours.read(route, { mutation: 'delete', account: 'pat', cursor: 'x' }, cursor),
    [1_700_000_000_000, 42],
    'member order and the cursor itself do not matter',
  );
  t.throws(() => ours.read(route, { ...filters, mutation: 'copy' }, cursor), { code: 'E_HTTP_BAD_REQUEST', message: OTHER_FILTERS });
  t.throws(() => ours.read(route, { account: 'pat' }, cursor), { message: OTHER_FILTERS }, 'a filter dropped is another filter');
  t.throws(() => theirs.read(route, filters, cursor), { message: NOT_ISSUED_HERE }, 'another deployment');
  t.throws(() => ours.read('/api/admin/jobs/dead-letters', filters, cursor), { message: NOT_ISSUED_HERE }, 'another page');
  for (const bad of ['', 'not a cursor!', cursor.slice(0, -2), `${cursor}A`, 'x'.repeat(3000), Buffer.from('a1.x.y.z.w').toString('base64url')]) {
    t.throws(() => ours.read(route, filters, bad), { message: NOT_ISSUED_HERE });
  }
  // A position altered under the same tag is refused.
  const parts = Buffer.from(cursor, 'base64url').toString('latin1').split('.');
  parts[3] = Buffer.from(JSON.stringify([1, 1])).toString('base64url');
  t.throws(() => ours.read(route, filters, Buffer.from(parts.join('.')).toString('base64url')), { message: NOT_ISSUED_HERE });
});
