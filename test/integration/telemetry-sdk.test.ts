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
 * - a bad OTEL_ variable refuses startup with check-config's lines.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
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
  t.notOk(loadedHere().includes('@opentelemetry/exporter-trace-otlp-http'), 'an exporter not configured is not loaded');

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
