/**
 * The listener's route lookup with path templates: a path written out wins
 * over a template it also fills; `{name}` matches one non-empty segment,
 * percent-decoded (a segment that does not decode is passed as sent); the
 * methods at a path are those of the one route path found (for 405), and
 * nothing matches a path with more or fewer segments.
 */
import t from 'tap';
import { routesAt } from '../../../http/admin/admin-listener.ts';
import { ROUTES } from '../../../http/admin/routes/index.ts';

const at = (path: string) => {
  const found = routesAt(ROUTES, path);
  return { routes: found.routes.map((r) => `${r.method} ${r.path}`), params: found.params };
};

t.test('paths written out, then templates', async (t) => {
  t.same(at('/api/admin/outbox/summary'), { routes: ['GET /api/admin/outbox/summary'], params: {} }, 'the summary is not an id');
  t.same(at('/api/admin/outbox/cancellation'), { routes: ['POST /api/admin/outbox/cancellation'], params: {} }, 'GET there is a 405, not the detail');
  t.same(at('/api/admin/outbox'), { routes: ['GET /api/admin/outbox'], params: {} });
  t.same(at('/api/admin/outbox/o12'), { routes: ['GET /api/admin/outbox/{id}'], params: { id: 'o12' } });
  t.same(at('/api/admin/outbox/o%31%32'), { routes: ['GET /api/admin/outbox/{id}'], params: { id: 'o12' } }, 'percent-decoded');
  t.same(at('/api/admin/outbox/%E0%A4%A'), { routes: ['GET /api/admin/outbox/{id}'], params: { id: '%E0%A4%A' } }, 'undecodable: as sent');
  t.same(at('/api/admin/outbox/whatever'), { routes: ['GET /api/admin/outbox/{id}'], params: { id: 'whatever' } }, 'the use case judges the id');
  t.same(at('/api/admin/outbox/'), { routes: [], params: {} }, 'an empty segment fills no template');
  t.same(at('/api/admin/outbox/o12/recipients'), { routes: [], params: {} });
  t.same(at('/api/admin/outbox/o12/'), { routes: [], params: {} });
  t.same(at('/api/admin/nothing'), { routes: [], params: {} });
});
