/**
 * The route table is the reference: docs/admin-api.md carries what the
 * table holds now (`npm run docs:admin` rewrites it; a change to a route's
 * permission, summary, limit or schemas fails here until the page is
 * regenerated), and every route served publishes exactly the permission of
 * the spec's route table, with a body limit on each write.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { withCurrentRoutes } from '../../../http/admin/routes-doc.ts';
import { ROUTES } from '../../../http/admin/routes/index.ts';

/** The one permission each route publishes, as docs/admin-api.md "Routes" states it (null: none). */
const SPEC: Record<string, string | null> = {
  'GET /api/admin/session': null,
  'POST /api/admin/mailbox/refresh-token': 'service.admin.credentials.write',
  'GET /api/admin/mailbox/synchronization': 'service.admin.read',
  'GET /api/admin/mailbox/rewind': 'service.admin.read',
  'POST /api/admin/mailbox/rewind': 'service.admin.operate',
  'POST /api/admin/mailbox/rederivation': 'service.admin.operate',
  'GET /api/admin/mailbox/rederivation': 'service.admin.read',
  'GET /api/admin/mailbox/mutations/audit': 'service.admin.audit.read',
  'GET /api/admin/answering/audit': 'service.admin.audit.read',
  'GET /api/admin/embeddings': 'service.admin.read',
  'GET /api/admin/embeddings/activation': 'service.admin.read',
  'POST /api/admin/embeddings/activation': 'service.admin.spend',
  'POST /api/admin/embeddings/reindex/cancellation': 'service.admin.operate',
  'GET /api/admin/rules': 'service.admin.read',
  'POST /api/admin/rules/runs': 'service.admin.operate',
  'GET /api/admin/rules/runs': 'service.admin.read',
  'GET /api/admin/rules/history': 'service.admin.audit.read',
  'POST /api/admin/spam/runs': 'service.admin.operate',
  'GET /api/admin/spam/runs': 'service.admin.read',
  'GET /api/admin/spam/classifications': 'service.admin.audit.read',
  'GET /api/admin/jobs/dead-letters': 'service.admin.read',
  'POST /api/admin/jobs/dead-letters/retry': 'service.admin.operate',
  'POST /api/admin/jobs/dead-letters/drop': 'service.admin.operate',
  'GET /api/admin/outbox/summary': 'service.admin.read',
  'GET /api/admin/outbox': 'service.admin.read',
  'GET /api/admin/outbox/{id}': 'service.admin.audit.read',
  'POST /api/admin/outbox/cancellation': 'service.admin.operate',
  'POST /api/admin/outbox/requeue': 'service.admin.operate',
  'POST /api/admin/folders/erasure': 'service.admin.erase',
  'GET /api/admin/contacts': 'service.admin.audit.read',
  'POST /api/admin/contacts': 'service.admin.operate',
  'GET /api/admin/contacts/by-address': 'service.admin.audit.read',
  'GET /api/admin/contacts/{id}': 'service.admin.audit.read',
  'PUT /api/admin/contacts/{id}': 'service.admin.operate',
  'POST /api/admin/contacts/{id}/promotion': 'service.admin.operate',
  'DELETE /api/admin/contacts/{id}': 'service.admin.erase',
  'DELETE /api/admin/contacts/collected': 'service.admin.erase',
  'GET /api/admin/contacts/{id}/export': 'service.admin.audit.read',
};

t.test('docs/admin-api.md carries the current route table', async (t) => {
  const doc = readFileSync(new URL('../../../docs/admin-api.md', import.meta.url), 'utf8');
  t.equal(doc, withCurrentRoutes(doc), 'npm run docs:admin');
});

t.test('every route served publishes the permission of the spec', async (t) => {
  const seen = new Set<string>();
  for (const route of ROUTES) {
    const name = `${route.method} ${route.path}`;
    t.notOk(seen.has(name), `${name} is served once`);
    seen.add(name);
    t.ok(Object.hasOwn(SPEC, name), `${name} is in the spec's table`);
    t.equal(route.permission, SPEC[name], name);
    if (route.method === 'POST') t.ok(route.bodyLimit !== undefined && route.bodyLimit <= 16 * 1024, `${name} states its body limit`);
    t.ok(route.summary.length > 0 && !route.summary.endsWith('.'), `${name} has a one-line summary`);
  }
});
