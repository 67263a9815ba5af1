/**
 * The embedding routes' refusals, which the listener and the use cases
 * decide before the embedding actor is asked, through a service started for
 * real (no mail account, no profile declared):
 * - the route filter's 403 problem document (exactly status, detail,
 *   permission) to a credential lacking the permission each route
 *   publishes: `read` for the status and the forecast, `spend` for the
 *   activation (a read-only credential is refused it), `operate` for the
 *   reindex cancellation; each counted once as a refusal;
 * - a write's body carrying a member, an array or text that is not JSON is
 *   a 400 naming what to change, and repeats nothing the body held;
 * - no refused request reached the actor (nothing was logged as failed or
 *   unavailable), and no key reaches a log line.
 * What the actor answers is test/http/admin/embeddings-service.test.ts.
 */
import t from 'tap';
import { adminCall } from '../../helpers/admin-client.ts';
import { startCliService } from '../../cli/harness.ts';

t.setTimeout(120_000);

t.test('embedding routes: 403 by the permission each publishes, 400 for a body with members', async (t) => {
  const svc = await startCliService(t);
  const api = `${svc.admin}/api/admin`;

  const routes: Array<{ method: 'GET' | 'POST'; path: string; permission: string; refused: Array<keyof typeof svc.keys> }> = [
    { method: 'GET', path: '/embeddings', permission: 'service.admin.read', refused: ['nothing'] },
    { method: 'GET', path: '/embeddings/activation', permission: 'service.admin.read', refused: ['nothing'] },
    { method: 'POST', path: '/embeddings/activation', permission: 'service.admin.spend', refused: ['nothing', 'reader'] },
    { method: 'POST', path: '/embeddings/reindex/cancellation', permission: 'service.admin.operate', refused: ['nothing', 'reader'] },
  ];
  let refusals = 0;
  for (const route of routes) {
    for (const key of route.refused) {
      for (const body of route.method === 'POST' ? [{ json: {} }, {}] : [{}]) {
        const answer = await adminCall(`${api}${route.path}`, { method: route.method, apiKey: svc.keys[key], ...body });
        const what = `${route.method} ${route.path} as ${key}${'json' in body ? ' with {}' : ''}`;
        t.equal(answer.status, 403, what);
        t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
        t.same(answer.json(), { status: 403, detail: `The credential does not hold the permission ${route.permission}.`, permission: route.permission }, what);
        refusals += 1;
      }
    }
  }
  t.equal(svc.logs.events('auth.refused').length, refusals, 'each refusal counted once');

  const secretish = 'Privé <olga@example.org> token-1234567';
  const bad: Array<[string, { json?: unknown; body?: string }, RegExp]> = [
    ['/embeddings/activation', { json: { profile: 'x' } }, /^Leave out the member profile; this route does not take it\.$/],
    ['/embeddings/activation', { json: { confirm: true, model: secretish } }, /^Leave out the members? confirm, model; this route does not take it\.$/],
    ['/embeddings/activation', { json: [] }, /^Send a JSON object as the body\.$/],
    ['/embeddings/activation', { body: '{"yes":' }, /^Send a body that is well-formed JSON\.$/],
    ['/embeddings/reindex/cancellation', { json: { generation: 2 } }, /^Leave out the member generation; this route does not take it\.$/],
  ];
  for (const [path, body, detail] of bad) {
    const answer = await adminCall(`${api}${path}`, { method: 'POST', apiKey: svc.keys.operator, ...body });
    t.equal(answer.status, 400, `${path} ${JSON.stringify(body)}`);
    const problem = answer.json();
    t.equal(problem.title, 'Invalid request');
    t.match(problem.detail, detail);
    t.notOk(answer.body.includes('olga@example.org') || answer.body.includes('token-1234567'), 'nothing the body held is repeated');
  }

  const unknownQuery = await adminCall(`${api}/embeddings?verbose=1`, { apiKey: svc.keys.operator });
  t.equal(unknownQuery.status, 400);
  t.match(unknownQuery.json().detail, /^Leave out the query string; this route takes none\.$/);

  t.same(svc.logs.events('http.failed'), [], 'no refused request failed behind the listener');
  t.same(svc.logs.events('admin.unavailable'), [], 'no refused request asked the embedding actor');
  const raw = svc.logs.raw();
  t.notOk(
    svc.secrets.some((s) => raw.includes(s)),
    'no key in any log line',
  );
  t.notOk(raw.includes('olga@example.org'), 'nothing a refused body held in any log line');
});
