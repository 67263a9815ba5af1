/**
 * The OpenTelemetry SDK as the service installs it (runtime/telemetry/sdk.ts,
 * host-sdk.ts), in-process with real actor threads:
 * - telemetry off: no SDK or exporter package is loaded, in the main thread
 *   or in an actor thread (every OpenTelemetry package is CommonJS, so the
 *   require cache of a thread lists each module it loaded); this subtest
 *   runs first, before anything in this process loads them;
 * - on, with Prometheus: a metric recorded in an actor thread reaches the
 *   main thread's SDK and the scrape listener (`GET /metrics`); other paths
 *   are an empty 404; only the exporters configured are loaded; a name the
 *   catalogue does not hold is dropped and logged once; the listener opens
 *   with the others (readiness) and closes at the stop;
 * - a bad OTEL_ variable refuses startup with check-config's lines;
 * - OTLP/HTTP in JSON and in protobuf, to a loopback receiver: the
 *   forwarded metric pushed by the main thread, and a span pushed straight
 *   from the actor thread that ran it, each in the encoding asked for.
 */
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startService } from '../../service/app.ts';
import { runCheckConfig } from '../../service/check-config.ts';
import { captureLog, until } from '../helpers/log-capture.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';

const MEASURING = new URL('../fixtures/actors/measuring.ts', import.meta.url);
const child = { id: 'measuring', entry: MEASURING, restart: 'permanent' as const, config: null };

function loadedHere(): string[] {
  const names = Object.keys(createRequire(import.meta.url).cache).flatMap((file) => /node_modules\/(@opentelemetry\/[^/]+)\//.exec(file)?.[1] ?? []);
  return [...new Set(names)].sort();
}

/** What only an installed SDK loads: the API alone stays (instruments are looked up through it). */
const SDK_PACKAGE = /^@opentelemetry\/(sdk-|exporter-|otlp-|resources|context-async-hooks|core)/;

t.test('telemetry off: no SDK or exporter module is loaded, in the main thread or in an actor thread', async (t) => {
  const dir = tempDir(t);
  const { log } = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') }, Telemetry: { Enabled: false } }),
    // Ignored while Telemetry:Enabled is false.
    env: { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_TRACES_EXPORTER: 'otlp' },
    log,
    extraChildren: [child],
  });
  t.teardown(() => service.stop());
  const inThread = (await service.supervisor.ref('measuring').ask({ type: 'loaded-packages' }, { deadlineMs: 5_000 })) as string[];
  await service.supervisor.ref('measuring').ask({ type: 'sync-run', seconds: 1, account: 'alice', folder: 'inbox' }, { deadlineMs: 5_000 });
  t.ok(inThread.includes('@opentelemetry/api'), 'the probe sees what the thread loaded (the API, through the instruments)');
  t.same(
    inThread.filter((name) => SDK_PACKAGE.test(name)),
    [],
    `actor thread loaded: ${inThread.join(', ')}`,
  );
  t.same(
    loadedHere().filter((name) => SDK_PACKAGE.test(name)),
    [],
    `main thread loaded: ${loadedHere().join(', ')}`,
  );
  t.same(
    service.listeners.map((l) => l.section),
    ['HealthEndpoints'],
    'no scrape listener',
  );
});

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (response.status !== 200) throw new Error(`scrape answered ${response.status}`);
  return response.text();
}

t.test("telemetry on with Prometheus: an actor thread's measurements reach the scrape endpoint", async (t) => {
  const dir = tempDir(t);
  const { log, events } = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, {
      HealthEndpoints: { Port: 0 },
      Storage: { Database: join(dir, 'm.db') },
      Telemetry: { Enabled: true, Metrics: { Prometheus: { Enabled: true, Port: 0 }, Otlp: { Enabled: false } }, Traces: { Otlp: { Enabled: false } } },
    }),
    env: {},
    log,
    extraChildren: [child],
  });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : service.stop()));
  const scrapeListener = service.listeners.find((l) => l.section === 'Telemetry:Metrics:Prometheus');
  t.ok(scrapeListener, 'the scrape listener is opened with the others');
  t.equal(service.readiness().ready, true);
  const port = scrapeListener!.address.port;

  const ref = service.supervisor.ref('measuring');
  await ref.ask({ type: 'sync-run', seconds: 0.3, account: 'alice', folder: 'inbox' }, { deadlineMs: 5_000 });
  await ref.ask({ type: 'sync-run', seconds: 42, account: 'alice', folder: 'inbox' }, { deadlineMs: 5_000 });
  await ref.ask({ type: 'refusal', times: 3 }, { deadlineMs: 5_000 });
  await ref.ask({ type: 'unknown-metric' }, { deadlineMs: 5_000 });
  await ref.ask({ type: 'unknown-metric' }, { deadlineMs: 5_000 });

  let text = '';
  const countLine = /^mailcairn_sync_run_duration_count\{[^}]*mailcairn_account="alice"[^}]*\} (\d+)/m;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    text = await scrape(port);
    if (countLine.exec(text)?.[1] === '2' && /service_authorization_refusals_total\{/.test(text)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(countLine.exec(text)?.[1], '2', `both runs recorded in the actor thread are counted:\n${text}`);
  t.match(text, /^mailcairn_sync_run_duration_sum\{[^}]*\} 42\.3$/m, 'with their sum');
  t.match(text, /^mailcairn_sync_run_duration_bucket\{[^}]*le="60"[^}]*\} 2$/m, 'in bucket boundaries made for seconds');
  t.match(
    text,
    /^service_authorization_refusals_total\{surface="admin",target="\/api\/admin\/outbox\/\{id\}",permission="outbox\.write",otel_scope_name="mailcairn"\} 3$/m,
    'the counter summed in the thread',
  );
  t.match(text, /service_name="mailcairn"/, 'the resource names the service');
  t.notMatch(text, /not_in_catalogue/, 'a name the catalogue does not hold is dropped');
  await until(() => events('telemetry.unknown-metric').length > 0, 5_000, 'unknown metric logged');
  t.equal(events('telemetry.unknown-metric').length, 1, 'and logged once');

  const other = await fetch(`http://127.0.0.1:${port}/`);
  t.equal(other.status, 404);
  t.equal(await other.text(), '', 'an empty 404 elsewhere');

  const inThread = (await ref.ask({ type: 'loaded-packages' }, { deadlineMs: 5_000 })) as string[];
  t.notOk(inThread.includes('@opentelemetry/sdk-metrics'), 'an actor thread forwards: it loads no metrics SDK');
  t.ok(loadedHere().includes('@opentelemetry/sdk-metrics') && loadedHere().includes('@opentelemetry/exporter-prometheus'));
  t.notOk(loadedHere().includes('@opentelemetry/otlp-transformer'), 'an exporter not configured is not loaded (no OTLP serialiser)');

  stopped = true;
  await service.stop();
  await t.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'the stop closes the scrape listener');
});

t.test('a bad OTEL_ variable refuses startup with the lines check-config prints', async (t) => {
  const dir = tempDir(t);
  const file = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') }, Telemetry: { Enabled: true } });
  const env = { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_METRIC_EXPORT_INTERVAL: 'soon' };
  const out: string[] = [];
  t.equal(runCheckConfig({ file, env, out: (line) => out.push(line) }), 78);
  const { log } = captureLog();
  const refusal = await startService({ configFile: file, env, log }).then(
    () => null,
    (err: Error & { code?: string }) => err,
  );
  t.equal(refusal?.code, 'E_CONFIG_INVALID');
  t.same(
    refusal?.message.split('\n').map((line) => `  ${line}`),
    out.slice(2),
    'the same problems, in the same words',
  );
  t.match(out.join('\n'), /OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not served/);
});

type Received = { path: string; contentType: string; body: Buffer };

/** A loopback OTLP/HTTP receiver: keeps every request and answers success (an empty JSON or protobuf response). */
async function receiver(t: Test): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const contentType = request.headers['content-type'] ?? '';
      received.push({ path: request.url ?? '', contentType, body: Buffer.concat(chunks) });
      response.statusCode = 200;
      response.setHeader('content-type', contentType);
      response.end(contentType.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  t.test(`OTLP push in ${protocol}: metrics from the main SDK, spans straight from an actor thread`, async (t) => {
    const dir = tempDir(t);
    const collector = await receiver(t);
    const { log } = captureLog();
    const service = await startService({
      configFile: writeConfig(dir, {
        HealthEndpoints: { Port: 0 },
        Storage: { Database: join(dir, 'm.db') },
        Telemetry: { Enabled: true, ServiceName: 'mc-otlp' },
      }),
      // Everything from the environment: the endpoint, the protocol and the interval.
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_METRIC_EXPORT_INTERVAL: '200' },
      log,
      extraChildren: [child],
    });
    let stopped = false;
    t.teardown(() => (stopped ? undefined : service.stop()));
    const ref = service.supervisor.ref('measuring');
    await ref.ask({ type: 'sync-run', seconds: 2, account: 'alice', folder: 'inbox' }, { deadlineMs: 5_000 });
    const traceId = await ref.ask({ type: 'span' }, { deadlineMs: 5_000 });
    t.match(traceId, /^[0-9a-f]{32}$/, 'the actor thread records spans');
    const has = (path: string, text: string): boolean => collector.received.some((r) => r.path === path && r.body.includes(text));
    await until(() => has('/v1/metrics', 'mailcairn.sync.run.duration'), 10_000, 'the forwarded histogram pushed');
    await until(() => has('/v1/traces', 'fixture.work'), 10_000, 'the span pushed');
    const expected = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    for (const request of collector.received) t.equal(request.contentType, expected, `${request.path} in ${protocol}`);
    const traces = collector.received.find((r) => r.path === '/v1/traces' && r.body.includes('fixture.work'))!;
    t.ok(traces.body.includes('mc-otlp'), 'the resource carries service.name');
    if (protocol === 'http/json') {
      const spans = (JSON.parse(traces.body.toString()) as { resourceSpans: { scopeSpans: { spans: { name: string; traceId: string }[] }[] }[] }).resourceSpans
        .flatMap((r) => r.scopeSpans)
        .flatMap((s) => s.spans);
      t.ok(
        spans.some((span) => span.name === 'fixture.work' && span.traceId === traceId),
        'the span is the one the thread ran',
      );
    } else t.ok(traces.body.includes(Buffer.from(traceId as string, 'hex')), 'the span is the one the thread ran');
    stopped = true;
    await service.stop();
  });
}
