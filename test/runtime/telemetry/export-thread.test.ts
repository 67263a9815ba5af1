/**
 * The main thread's OTLP pushes go out from the export thread
 * (runtime/telemetry/export-thread.ts): the receiver gets the metrics and
 * spans in the encoding asked for, while the main thread itself makes no
 * node:http client request (the channel node:http publishes each one on
 * stays silent here).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { trace } from '@opentelemetry/api';
import t from 'tap';
import { installTelemetry } from '../../../runtime/telemetry/sdk.ts';
import { captureLog, until } from '../../helpers/log-capture.ts';
import { startOtlpReceiver } from '../../helpers/otlp-receiver.ts';

t.setTimeout(60_000);

t.test('pushes reach the receiver from the export thread, none through node:http on the main thread', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const requestsHere: unknown[] = [];
  const onRequest = (message: unknown): void => void requestsHere.push(message);
  subscribe('http.client.request.start', onRequest);
  t.teardown(() => unsubscribe('http.client.request.start', onRequest));

  const { log } = captureLog();
  const telemetry = await installTelemetry(
    {
      serviceName: 'export-thread-test',
      metrics: { prometheus: null, otlp: { url: `${receiver.url}/v1/metrics`, protocol: 'http/protobuf', intervalMs: 200 } },
      traces: { otlp: { url: `${receiver.url}/v1/traces`, protocol: 'http/json' } },
    },
    { log, version: '0.0.0-test' },
  );
  trace.getTracer('export-thread-test').startSpan('a span of the main thread').end();
  await receiver.waitForSpans((spans) => spans.some((s) => s.name === 'a span of the main thread'), 15_000, 'the span');
  await until(() => receiver.requests().some((r) => r.signal === 'metrics'), 15_000, 'a metric push');
  await telemetry.shutdown();

  const kinds = new Set(receiver.requests().map((r) => `${r.signal} ${r.encoding}`));
  t.ok(kinds.has('metrics protobuf') && kinds.has('traces json'), `each signal in the encoding asked for: ${[...kinds].join(', ')}`);
  t.same(receiver.refused(), [], 'every request decoded');
  t.equal(requestsHere.length, 0, 'the main thread made no node:http client request');
});
