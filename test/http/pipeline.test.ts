/**
 * The pipeline's own stages over a real listener (createListener) asked by
 * undici: an unknown path is an empty 404; `admit` answers 504 once past
 * the request timeout, and what the abandoned handler writes afterwards
 * (headers, a whole answer, as the MCP SDK's transport does) goes nowhere
 * and is no failure; the permit comes back; a spent bucket is 429; a
 * handler's failure is an empty 500, logged by the listener's own hook.
 */
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { request } from 'undici';
import { admit, createListener, type Handler } from '../../http/pipeline.ts';
import { createRateLimiter, partitionFor } from '../../http/limits/rate-limiter.ts';

type Behaviour = 'late-answer' | 'ok' | 'throw';

async function setup(t: { teardown(fn: () => unknown): void }, tokens = 100) {
  const limiter = createRateLimiter(
    {
      Enabled: true,
      MaxConcurrentRequests: 1,
      ConcurrencyQueueLimit: 0,
      TokenCapacity: tokens,
      TokensPerReplenishmentPeriod: tokens,
      ReplenishmentPeriod: 60_000,
      RequestQueueLimit: 0,
    },
    { surface: 'mcp' },
  );
  const failures: unknown[] = [];
  const lateWrites: string[] = [];
  let behaviour: Behaviour = 'ok';
  const handler: Handler = async (req, res) => {
    const admitted = await admit(req, res, { limiter, timeout: { Enabled: true, Duration: 100 } }, partitionFor('mcp', { kind: 'other' }));
    if (admitted === null) return;
    switch (behaviour) {
      case 'late-answer':
        await sleep(200);
        lateWrites.push(`abandoned=${res.abandoned}`);
        // What a transport that owns the response does, unaware of the 504.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.setHeader('X-Late', 'yes');
        res.write('{"late":');
        res.end('true}');
        lateWrites.push('written');
        return;
      case 'throw':
        throw new Error('broken handler');
      case 'ok':
        res.end('ok');
    }
  };
  const server = createListener({
    surface: 'mcp',
    route: (_req, _res, path) => (path === '/work' ? { template: '/work', handler } : null),
    failed: (err) => failures.push(err),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    failures,
    lateWrites,
    set: (next: Behaviour) => {
      behaviour = next;
    },
  };
}

t.test('an unknown path is an empty 404, nothing spent', async (t) => {
  const s = await setup(t, 1);
  const res = await request(`${s.base}/elsewhere`, { method: 'POST', body: 'x'.repeat(1000) });
  t.equal(res.statusCode, 404);
  t.equal(await res.body.text(), '');
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal((await request(`${s.base}/work`)).statusCode, 200, 'the one token is still there');
});

t.test('past the request timeout: one empty 504; the handler writing afterwards writes nowhere and fails nothing', async (t) => {
  const s = await setup(t);
  s.set('late-answer');
  const res = await request(`${s.base}/work`);
  t.equal(res.statusCode, 504);
  t.equal(await res.body.text(), '');
  t.equal(res.headers['x-late'], undefined);
  await sleep(250);
  t.same(s.lateWrites, ['abandoned=true', 'written'], 'the late answer was attempted, and returned normally');
  t.same(s.failures, [], 'no "headers already sent" failure');
  s.set('ok');
  const next = await request(`${s.base}/work`);
  t.equal(next.statusCode, 200, 'the one permit came back');
  t.equal(await next.body.text(), 'ok');
});

t.test('a spent bucket is 429 with Retry-After', async (t) => {
  const s = await setup(t, 2);
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await request(`${s.base}/work`, { method: 'POST', body: '{}' });
    await res.body.text();
    statuses.push(res.statusCode);
    if (res.statusCode === 429) t.ok(Number(res.headers['retry-after']) >= 1);
  }
  t.same(statuses, [200, 200, 429]);
});

t.test('a handler that fails: an empty 500, reported to the listener', async (t) => {
  const s = await setup(t);
  s.set('throw');
  const res = await request(`${s.base}/work`);
  t.equal(res.statusCode, 500);
  t.equal(await res.body.text(), '');
  t.equal(s.failures.length, 1);
  t.match(s.failures[0], { message: 'broken handler' });
});
