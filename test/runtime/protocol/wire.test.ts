/** Envelopes survive the wire unchanged, and anything malformed is refused rather than delivered. */
import t from 'tap';
import type { FromHost, ToHost } from '../../../runtime/protocol/envelope.ts';
import { decodeFromHost, decodeToHost, encodeFromHost, encodeToHost } from '../../../runtime/protocol/wire.ts';

const bytes = new Uint8Array([1, 2, 3]);
const error = { code: 'E_ACTOR_DOWN', message: 'Actor stopped before replying', retryable: true };

const toHost: ToHost[] = [
  { kind: 'start', actor: 'a', incarnation: 2, entry: 'file:///x.js', config: { n: 1 } },
  { kind: 'stop', actor: 'a' },
  { kind: 'tell', id: 't1', to: 'a', msg: { type: 'x' } },
  { kind: 'tell', id: 't2', to: 'a', msg: null, meta: { trace: 'tr', principal: 'p' } },
  { kind: 'ask', id: 'm1', to: 'a', msg: { bytes }, deadline: 123 },
  { kind: 'reply', id: 'h1-1', reply: { ok: true, value: [1] } },
  { kind: 'reply', id: 'h1-2', reply: { ok: false, error } },
];
const fromHost: FromHost[] = [
  { kind: 'heartbeat', at: 5 },
  { kind: 'started', actor: 'a', incarnation: 1 },
  { kind: 'stopped', actor: 'a', incarnation: 1 },
  { kind: 'crashed', actor: 'a', incarnation: 1, error },
  { kind: 'exited', actor: 'a', incarnation: 1, reason: 'normal' },
  { kind: 'processed', actor: 'a', count: 3 },
  { kind: 'reply', id: 'm1', from: 'a', reply: { ok: true, value: bytes } },
  { kind: 'reply', id: 'm2', from: 'a', reply: { ok: false, error } },
  { kind: 'tell', id: 'h1-3', from: 'a', to: 'b', msg: 1 },
  { kind: 'ask', id: 'h1-4', from: 'a', to: 'b', msg: 1, meta: { trace: 'x' }, deadline: 9 },
  {
    kind: 'measurements',
    batch: [
      ['mailcairn.sync.run.duration', 0.25, { 'mailcairn.account': 'alice', 'mailcairn.folder': 'inbox' }],
      ['service.authorization.refusals', 3, {}],
    ],
  },
];

t.test('every envelope kind round-trips through structured clone', async (t) => {
  for (const e of toHost) t.same(decodeToHost(structuredClone(encodeToHost(e))), e, `to host: ${e.kind}`);
  for (const e of fromHost) t.same(decodeFromHost(structuredClone(encodeFromHost(e))), e, `from host: ${e.kind}`);
});

t.test('malformed wire values are refused', async (t) => {
  const bad: unknown[] = [
    null,
    {},
    { kind: 'ask' },
    [],
    ['nope'],
    ['ask', 'm1', 'a', {}, null],
    ['ask', 'm1', 'a', {}, null, 'soon'],
    ['ask', '', 'a', {}, null, 1],
    ['tell', 'm1', 'a', {}, { trace: 1 }],
    ['tell', 'm1', 'a', {}, { extra: 'x' }],
    ['reply', 'm1', false, { code: 'E_X' }],
    ['start', 'a', 1.5, 'x', null],
  ];
  for (const raw of bad) t.equal(decodeToHost(raw), null, JSON.stringify(raw));
  t.equal(decodeFromHost(['processed', 'a', 0]), null, 'a zero count');
  t.equal(decodeFromHost(['heartbeat']), null);
  t.equal(decodeFromHost(['reply', 'm1', 'a', true]), null, 'missing value slot');
  t.equal(decodeFromHost(['__proto__', 1]), null);
  t.equal(decodeFromHost(['measurements', []]), null, 'an empty batch');
  t.equal(decodeFromHost(['measurements', [['m', '1', {}]]]), null, 'a value that is no number');
  t.equal(decodeFromHost(['measurements', [['m', 1, { a: ['list'] }]]]), null, 'a label that is no primitive');
  t.equal(decodeFromHost(['measurements', [['', 1, {}]]]), null, 'an empty name');
});
