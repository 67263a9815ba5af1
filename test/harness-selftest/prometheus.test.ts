/**
 * The Prometheus harness itself, against the real exposition: a
 * MeterProvider of @opentelemetry/sdk-metrics (local to this test, never the
 * global one) with the Prometheus exporter of the same release the service
 * uses, served on a loopback port. The Debian Prometheus scrapes it every
 * second; the instruments are named and labelled as the catalogue's, so the
 * names `exposedName` computes are the ones Prometheus answers to (a counter
 * with `_total`, a gauge and an up-down counter bare, a histogram's `_count`).
 * Stopping ends the process it started.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import t from 'tap';
import { METRICS } from '../../runtime/telemetry/catalogue.ts';
import { exposedLabel, exposedName, SCRAPE_JOB, startPrometheus } from '../harness/prometheus.ts';

t.setTimeout(120_000);

t.test('names the exporter writes', async (t) => {
  t.equal(exposedName(METRICS.mailboxMessages), 'mailcairn_mailbox_messages');
  t.equal(exposedName(METRICS.authorizationRefusals), 'service_authorization_refusals_total');
  t.equal(exposedName(METRICS.supervisorRestarts), 'mailcairn_supervisor_restarts_total');
  t.equal(exposedName(METRICS.rateLimitActiveLeases), 'service_rate_limiting_active_request_leases');
  t.equal(exposedName(METRICS.httpServerDuration, 'count'), 'http_server_request_duration_count');
  t.equal(exposedLabel('mailcairn.account'), 'mailcairn_account');
  t.equal(exposedLabel('http.response.status_code'), 'http_response_status_code');
  t.throws(() => exposedName(METRICS.mailboxMessages, 'count'), /not a histogram/);
});

t.test('scrapes a real OpenTelemetry exposition and answers queries by the exposed names', async (t) => {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  t.teardown(() => provider.shutdown());
  const server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;

  const meter = provider.getMeter('mailcairn');
  const def = (key: keyof typeof METRICS) => ({ description: METRICS[key].description, unit: METRICS[key].unit });
  const refusals = meter.createCounter(METRICS.authorizationRefusals.name, def('authorizationRefusals'));
  refusals.add(1, { surface: 'mcp', target: 'create_contact', permission: 'service.mail.contacts.write' });
  refusals.add(2, { surface: 'admin', target: 'GET /api/admin/outbox/{id}', permission: 'service.admin.audit.read' });
  meter
    .createObservableGauge(METRICS.mailboxMessages.name, def('mailboxMessages'))
    .addCallback((result) => result.observe(42, { 'mailcairn.account': 'acct', 'mailcairn.folder': 'inbox' }));
  meter.createUpDownCounter(METRICS.rateLimitActiveLeases.name, def('rateLimitActiveLeases')).add(3, { policy: 'McpEndpoint:RateLimiting' });
  const duration = meter.createHistogram(METRICS.httpServerDuration.name, def('httpServerDuration'));
  for (const seconds of [0.01, 0.2, 0.3])
    duration.record(seconds, { 'mailcairn.surface': 'mcp', 'http.request.method': 'POST', 'http.route': '/mcp', 'http.response.status_code': 200 });

  const prometheus = await startPrometheus({ target: `http://127.0.0.1:${port}/metrics` });
  const pid = prometheus.pid;
  t.ok(pid > 0);
  await prometheus.waitFor(`up{job="${SCRAPE_JOB}"}`, (s) => s[0]?.value === 1, 30_000);

  const messages = await prometheus.waitFor(exposedName(METRICS.mailboxMessages), (s) => s.length === 1);
  t.match(messages[0], { labels: { mailcairn_account: 'acct', mailcairn_folder: 'inbox', job: SCRAPE_JOB, otel_scope_name: 'mailcairn' }, value: 42 });

  const refused = await prometheus.query(exposedName(METRICS.authorizationRefusals));
  const byTarget = Object.fromEntries(refused.map((s) => [s.labels.target, s]));
  t.match(byTarget.create_contact, { labels: { surface: 'mcp', permission: 'service.mail.contacts.write' }, value: 1 });
  t.match(byTarget['GET /api/admin/outbox/{id}'], { labels: { surface: 'admin', permission: 'service.admin.audit.read' }, value: 2 });

  t.match(await prometheus.query(`${exposedName(METRICS.rateLimitActiveLeases)}{policy="McpEndpoint:RateLimiting"}`), [{ value: 3 }]);
  t.match(await prometheus.query(`${exposedName(METRICS.httpServerDuration, 'count')}{http_route="/mcp",http_response_status_code="200"}`), [{ value: 3 }]);
  t.match(await prometheus.query('1 + 1'), [{ labels: {}, value: 2 }], 'a scalar answers one unlabelled sample');
  await t.rejects(prometheus.query('sum('), /bad_data|parse error/, 'a query error rejects');

  const series = await prometheus.series();
  t.ok(
    series.some((labels) => labels.__name__ === 'target_info'),
    'series() lists every series, the resource too',
  );

  // The counter moves; the next scrape shows it.
  refusals.add(1, { surface: 'mcp', target: 'create_contact', permission: 'service.mail.contacts.write' });
  await prometheus.waitFor(`${exposedName(METRICS.authorizationRefusals)}{target="create_contact"}`, (s) => s[0]?.value === 2);

  await prometheus.stop();
  t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the process it started is gone');
});
