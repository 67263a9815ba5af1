/**
 * The trace context crosses threads in the envelope's `meta.trace`: an ask
 * made inside a trace opens `ask <kind>` on the sender's side, and the actor
 * (or pool task) on its host thread handles it inside `handle <kind>`, a
 * child in the same trace, so what the handler does is part of the request
 * that caused it. Real host threads and a real piscina pool; each host
 * thread runs the in-process SDK of test/helpers/telemetry-sdk.ts (the
 * fixtures install it where they load), as the service's SDK does in every
 * host thread. A pool thread runs none: the asking thread records its
 * `handle <pool>` span from the times it reports (runtime/pool/handled.ts).
 */
import { SpanKind } from '@opentelemetry/api';
import t, { type Test } from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { createLogger } from '../../../runtime/log.ts';
import { createPool } from '../../../runtime/pool/pool.ts';
import { Supervisor } from '../../../runtime/supervisor/supervisor.ts';
import { inSpan, traceCarrier } from '../../../runtime/telemetry/tracing.ts';
import { type SpanData, spanData } from '../../helpers/span-data.ts';
import { installTelemetrySdk } from '../../helpers/telemetry-sdk.ts';

const entry = new URL('../../fixtures/actors/traced.ts', import.meta.url);
const poolEntry = new URL('../../fixtures/pool/traced-task.ts', import.meta.url);

async function actors(t: Test, ...ids: string[]) {
  const supervisor = new Supervisor({ log: createLogger({ level: 'silent' }), hostLogLevel: 'silent' });
  t.teardown(() => supervisor.stop(2_000));
  await supervisor.start(ids.map((id) => ({ id, entry, restart: 'permanent' as const })));
  return (id: string) => supervisor.ref(id);
}

function mainTracing(t: Test) {
  const sdk = installTelemetrySdk(t);
  return { finished: () => sdk.spans().map(spanData) };
}

function one(spans: SpanData[], name: string): SpanData {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`expected one span named ${name}, found ${found.length} among ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

const spansOf = async (ref: { ask(msg: { type: 'spans' }): Promise<unknown> }): Promise<SpanData[]> => (await ref.ask({ type: 'spans' })) as SpanData[];

t.test('with telemetry off in the asking thread nothing is carried and the actor opens no span', async (t) => {
  const ref = await actors(t, 'traced');
  const id = await inSpan('request', {}, () => ref('traced').ask({ type: 'trace-id' }));
  t.equal(traceCarrier(), undefined, 'the no-op propagator yields no carrier');
  t.equal(id, null, 'the handler ran in no trace');
  t.same(await spansOf(ref('traced')), [], 'the host thread finished no span');
});

t.test("an ask inside a trace is handled in the same trace, its handle span a child of the asker's ask span", async (t) => {
  const tracing = mainTracing(t);
  const ref = await actors(t, 'imap-sync:acct-1');
  const id = await inSpan('request', { kind: SpanKind.SERVER }, () => ref('imap-sync:acct-1').ask({ type: 'trace-id' }));
  const main = tracing.finished();
  const request = one(main, 'request');
  const ask = one(main, 'ask imap-sync');
  t.equal(ask.kind, SpanKind.CLIENT);
  t.equal(ask.parentSpanId, request.spanId, 'the ask span is a child of the active span');
  t.same(ask.attributes, { 'mailcairn.actor': 'imap-sync' }, "named by the actor's kind, not the instance id");
  const handle = one(await spansOf(ref('imap-sync:acct-1')), 'handle imap-sync');
  t.equal(handle.kind, SpanKind.SERVER);
  t.equal(handle.traceId, request.traceId, 'the host thread continues the trace');
  t.equal(handle.parentSpanId, ask.spanId, 'its parent is the ask span across the thread boundary');
  t.equal(id, request.traceId, 'what the handler does runs inside the trace');
  t.notOk(JSON.stringify([...main, handle]).includes('acct-1'), 'the instance id appears in no span');
});

t.test('an ask outside any trace opens no span even with the SDK installed', async (t) => {
  const tracing = mainTracing(t);
  const ref = await actors(t, 'traced');
  t.equal(await ref('traced').ask({ type: 'trace-id' }), null);
  t.same(tracing.finished(), []);
  t.same(await spansOf(ref('traced')), []);
});

t.test('a refused ask marks both spans failed with its code, never its message', async (t) => {
  const tracing = mainTracing(t);
  const ref = await actors(t, 'traced');
  const err = await inSpan('request', {}, () => ref('traced').ask({ type: 'fail' })).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.code === 'E_TOOL_INVALID_INPUT');
  const ask = one(tracing.finished(), 'ask traced');
  const handle = one(await spansOf(ref('traced')), 'handle traced');
  for (const span of [ask, handle]) {
    t.equal(span.failed, true, `${span.name} is failed`);
    t.equal(span.attributes['error.type'], 'E_TOOL_INVALID_INPUT', `${span.name} records the code`);
  }
});

t.test('an ask answered later ends its handle span when the answer leaves', async (t) => {
  mainTracing(t);
  const ref = await actors(t, 'traced');
  t.equal(await inSpan('request', {}, () => ref('traced').ask({ type: 'later', ms: 120 })), 'done');
  const handle = one(await spansOf(ref('traced')), 'handle traced');
  t.ok(handle.durationMs >= 100, `the span lasted until the answer (${handle.durationMs.toFixed(1)} ms)`);
});

t.test('an ask from one host thread to another carries the trace on through the main thread', async (t) => {
  const tracing = mainTracing(t);
  const ref = await actors(t, 'first', 'second');
  const id = await inSpan('request', {}, () => ref('first').ask({ type: 'ask-other', to: 'second' }));
  const request = one(tracing.finished(), 'request');
  const first = await spansOf(ref('first'));
  const second = await spansOf(ref('second'));
  const firstHandle = one(first, 'handle first');
  const firstAsk = one(first, 'ask second');
  const secondHandle = one(second, 'handle second');
  t.equal(firstAsk.kind, SpanKind.CLIENT);
  t.equal(firstAsk.parentSpanId, firstHandle.spanId, "the actor's own ask is a child of its handle span");
  t.equal(secondHandle.parentSpanId, firstAsk.spanId, 'the second actor handles it as a child of that ask');
  t.same(new Set([firstHandle.traceId, firstAsk.traceId, secondHandle.traceId, id]), new Set([request.traceId]), 'one trace throughout');
  t.equal(one(tracing.finished(), 'ask first').spanId, firstHandle.parentSpanId);
  t.notOk(
    tracing.finished().some((s) => s.name === 'ask second'),
    'the main thread relays the envelope without a span of its own',
  );
});

t.test('a tell inside a trace is a producer span, handled as a consumer span in the same trace', async (t) => {
  const tracing = mainTracing(t);
  const ref = await actors(t, 'traced');
  await inSpan('request', {}, async () => ref('traced').tell({ type: 'note' }));
  const tell = one(tracing.finished(), 'tell traced');
  t.equal(tell.kind, SpanKind.PRODUCER);
  const handle = one(await spansOf(ref('traced')), 'handle traced');
  t.equal(handle.kind, SpanKind.CONSUMER);
  t.equal(handle.parentSpanId, tell.spanId);
  t.equal(handle.traceId, tell.traceId);
});

t.test("a pool task's handle span is timed by its thread and recorded by the asker's, a child of the ask span", async (t) => {
  const tracing = mainTracing(t);
  const pool = createPool({ id: 'mail-query', entry: poolEntry, minThreads: 1, maxThreads: 1 });
  t.teardown(() => pool.close());
  t.equal(await inSpan('request', {}, () => pool.ask({ type: 'wait', ms: 60 })), 'done');
  const err = await inSpan('request', {}, () => pool.ask({ type: 'fail' })).catch((e: unknown) => e);
  t.ok(err instanceof AppError);
  t.equal(await pool.ask({ type: 'wait', ms: 0 }), 'done', 'an ask outside any trace is answered as before');
  const spans = tracing.finished();
  const [okAsk, failedAsk] = spans.filter((s) => s.name === 'ask mail-query');
  const handles = spans.filter((s) => s.name === 'handle mail-query');
  t.equal(handles.length, 2, 'one per traced ask, none for the untraced one');
  t.equal(handles[0]?.parentSpanId, okAsk?.spanId);
  t.equal(handles[0]?.traceId, okAsk?.traceId);
  t.equal(handles[0]?.kind, SpanKind.SERVER);
  t.same(handles[0]?.attributes, { 'mailcairn.actor': 'mail-query' });
  t.notOk(handles[0]?.failed);
  // The thread's own times: the handling covers the task's 60 ms and lies within the ask (a few ms of clock slack between threads).
  t.ok(handles[0]!.durationMs >= 55, `the handling took ${handles[0]!.durationMs} ms`);
  t.ok(handles[0]!.durationMs <= okAsk!.durationMs + 5, `the handling (${handles[0]!.durationMs} ms) fits in the ask (${okAsk!.durationMs} ms)`);
  t.equal(handles[1]?.parentSpanId, failedAsk?.spanId);
  t.ok(handles[1]?.failed);
  t.equal(handles[1]?.attributes['error.type'], 'E_TOOL_INVALID_INPUT');
  t.equal(failedAsk?.attributes['error.type'], 'E_TOOL_INVALID_INPUT');
});
