/**
 * An actor thread's metrics (runtime/telemetry/forwarding-meter.ts): what the
 * API's instruments record becomes the batch the main thread records, summed
 * per series for counters, last value for gauges, every value for
 * histograms; observable instruments record nothing; the buffer is bounded.
 * And OpenTelemetry's diagnostics (diagnostics.ts): a kind, never the text,
 * at most once a minute per kind.
 */
import t from 'tap';
import { DiagnosticLimiter, diagnosticKind } from '../../../runtime/telemetry/diagnostics.ts';
import { ForwardingMeterProvider, MAX_SERIES } from '../../../runtime/telemetry/forwarding-meter.ts';

t.test('counters are summed per series, gauges keep their last value, histograms keep every value', (t) => {
  const provider = new ForwardingMeterProvider();
  const meter = provider.getMeter();
  const refusals = meter.createCounter('service.authorization.refusals');
  refusals.add(1, { surface: 'mcp', permission: 'mail.read' });
  refusals.add(2, { permission: 'mail.read', surface: 'mcp' });
  refusals.add(1, { surface: 'admin', permission: 'mail.read' });
  const leases = meter.createUpDownCounter('service.rate_limiting.active_request_leases');
  leases.add(1, { policy: 'p' });
  leases.add(-1, { policy: 'p' });
  const gauge = meter.createGauge('g');
  gauge.record(5);
  gauge.record(7);
  const runs = meter.createHistogram('mailcairn.sync.run.duration');
  runs.record(0.5, { 'mailcairn.account': 'alice' });
  runs.record(1.5, { 'mailcairn.account': 'alice', nested: ['x'] as unknown as string });
  meter.createObservableGauge('o').addCallback((result) => result.observe(1));
  t.same(provider.drain(), [
    ['service.authorization.refusals', 3, { surface: 'mcp', permission: 'mail.read' }],
    ['service.authorization.refusals', 1, { surface: 'admin', permission: 'mail.read' }],
    ['service.rate_limiting.active_request_leases', 0, { policy: 'p' }],
    ['g', 7, {}],
    ['mailcairn.sync.run.duration', 0.5, { 'mailcairn.account': 'alice' }],
    ['mailcairn.sync.run.duration', 1.5, { 'mailcairn.account': 'alice' }],
  ]);
  t.same(provider.drain(), [], 'a drain empties the period');
  t.end();
});

t.test('the buffer is bounded: beyond it values are dropped and counted', (t) => {
  const provider = new ForwardingMeterProvider();
  const histogram = provider.getMeter().createHistogram('h');
  for (let i = 0; i < MAX_SERIES + 5; i += 1) histogram.record(i);
  t.equal(provider.drain().length, MAX_SERIES);
  t.equal(provider.dropped(), 5);
  t.end();
});

t.test('a diagnostic becomes a kind, never its text', (t) => {
  t.equal(diagnosticKind('{"stack":"Error: connect ECONNREFUSED 127.0.0.1:4318","code":"ECONNREFUSED"}'), 'ECONNREFUSED');
  t.equal(diagnosticKind('OTLPExporterError: Bad Request status code 400 body: subject=Hello'), 'http-400');
  t.equal(diagnosticKind('Request Timeout'), 'timeout');
  t.equal(diagnosticKind('PrometheusExporter: metrics collection errors'), 'other');
  t.end();
});

t.test('each kind is logged at most once a window, with what was suppressed', (t) => {
  const limiter = new DiagnosticLimiter(60_000);
  t.same(limiter.admit('a', 0), { log: true, suppressed: 0 });
  t.same(limiter.admit('a', 1_000), { log: false, suppressed: 0 });
  t.same(limiter.admit('b', 1_000), { log: true, suppressed: 0 }, 'another kind has its own window');
  t.same(limiter.admit('a', 59_999), { log: false, suppressed: 0 });
  t.same(limiter.admit('a', 60_000), { log: true, suppressed: 2 });
  t.end();
});
