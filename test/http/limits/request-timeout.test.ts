/**
 * The request timeout over a real node:http server on loopback, wired the
 * way a listener wires it (timeout first, its signal into the limiter,
 * release on close and on timeout): a request past Duration is answered an
 * empty 504, its work sees the abort, its permit is free for the next
 * request, and a late write by the abandoned handler is harmless; an answer
 * already begun is cut off instead; a client that goes away aborts the work;
 * disabled sets no bound.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { request } from 'undici';
import { answerTooMany, createRateLimiter, partitionFor } from '../../../http/limits/rate-limiter.ts';
import { type RequestTimeoutSettings, withRequestTimeout } from '../../../http/limits/request-timeout.ts';

type Behaviour = 'hang' | 'hang-after-head' | 'slow-ok' | 'ok';

async function setup(t: { teardown(fn: () => unknown): void }, timeout: RequestTimeoutSettings, concurrencyQueue = 0) {
  const limiter = createRateLimiter(
    {
      Enabled: true,
      MaxConcurrentRequests: 1,
      ConcurrencyQueueLimit: concurrencyQueue,
      TokenCapacity: 100,
      TokensPerReplenishmentPeriod: 100,
      ReplenishmentPeriod: 60_000,
      RequestQueueLimit: 0,
    },
    { surface: 'mcp' },
  );
  const aborts: string[] = [];
  let behaviour: Behaviour = 'ok';
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let release = (): void => {};
    // `?ms=` shortens this request's bound, so one request can time out while another holds the permit.
    const ms = new URL(req.url ?? '/', 'http://x').searchParams.get('ms');
    const deadline = withRequestTimeout(res, ms === null ? timeout : { Enabled: true, Duration: Number(ms) }, () => release());
    const lease = await limiter.acquire(partitionFor('mcp', { kind: 'other' }), { signal: deadline.signal });
    if (!lease.ok) return answerTooMany(res, lease.retryAfterSeconds);
    release = lease.release;
    res.once('close', release);
    deadline.signal.addEventListener('abort', () => aborts.push((deadline.signal.reason as DOMException).name));
    switch (behaviour) {
      case 'hang':
        await new Promise((resolve) => deadline.signal.addEventListener('abort', resolve));
        // The abandoned handler still tries to answer: it must not crash the process.
        res.write('late');
        res.end();
        return;
      case 'hang-after-head':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('partial');
        await new Promise((resolve) => deadline.signal.addEventListener('abort', resolve));
        return;
      case 'slow-ok':
        await sleep(150);
        res.end('slow');
        return;
      case 'ok':
        res.end('ok');
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    aborts,
    set: (next: Behaviour) => {
      behaviour = next;
    },
  };
}

t.test('past Duration: an empty 504, the work aborted, the permit free again', async (t) => {
  const s = await setup(t, { Enabled: true, Duration: 100 });
  s.set('hang');
  const started = Date.now();
  const res = await request(`${s.base}/mcp`, { method: 'POST', body: '{}' });
  t.equal(res.statusCode, 504);
  t.equal(await res.body.text(), '');
  t.equal(res.headers['cache-control'], 'no-store');
  t.ok(Date.now() - started >= 90, 'not before Duration');
  t.same(s.aborts, ['TimeoutError']);
  s.set('ok');
  const next = await request(`${s.base}/mcp`);
  t.equal(next.statusCode, 200, 'the one permit was released by the timeout');
  t.equal(await next.body.text(), 'ok');
  t.end();
});

t.test('an answer already begun is cut off, and the permit released', async (t) => {
  const s = await setup(t, { Enabled: true, Duration: 100 });
  s.set('hang-after-head');
  const res = await request(`${s.base}/mcp`);
  t.equal(res.statusCode, 200);
  await t.rejects(res.body.text(), 'the connection is destroyed mid-answer');
  s.set('ok');
  t.equal((await request(`${s.base}/mcp`)).statusCode, 200);
  t.end();
});

t.test('a client that goes away aborts the work and frees the permit', async (t) => {
  const s = await setup(t, { Enabled: true, Duration: 60_000 });
  s.set('hang');
  const controller = new AbortController();
  const gone = request(`${s.base}/mcp`, { signal: controller.signal });
  await sleep(50);
  controller.abort();
  await t.rejects(gone);
  await sleep(50);
  t.same(s.aborts, ['AbortError']);
  s.set('ok');
  t.equal((await request(`${s.base}/mcp`)).statusCode, 200);
  t.end();
});

t.test('a request that times out while queued for a permit gets the 504, and leaves no permit behind', async (t) => {
  const s = await setup(t, { Enabled: true, Duration: 400 }, 1);
  s.set('hang');
  const holder = request(`${s.base}/mcp`);
  await sleep(30);
  const queued = await request(`${s.base}/mcp?ms=100`);
  t.equal(queued.statusCode, 504, 'the 504 went out; the cancelled wait answers nothing more');
  t.equal(await queued.body.text(), '');
  t.equal((await holder).statusCode, 504);
  s.set('ok');
  t.equal((await request(`${s.base}/mcp`)).statusCode, 200, 'the permit is free');
  t.end();
});

t.test('disabled: no bound', async (t) => {
  const s = await setup(t, { Enabled: false, Duration: 50 });
  s.set('slow-ok');
  const res = await request(`${s.base}/mcp`);
  t.equal(res.statusCode, 200);
  t.equal(await res.body.text(), 'slow');
  t.same(s.aborts, []);
  t.end();
});

t.test('the deadline an ask should carry', (t) => {
  const fake = { once: () => fake, on: () => fake } as unknown as ServerResponse;
  const before = Date.now();
  const on = withRequestTimeout(fake, { Enabled: true, Duration: 600_000 }, () => {});
  t.ok(on.deadline !== null && on.deadline >= before + 600_000 && on.deadline <= Date.now() + 600_000);
  t.equal(withRequestTimeout(fake, { Enabled: false, Duration: 600_000 }, () => {}).deadline, null);
  t.end();
});
