/**
 * `mailcairn.supervisor.restarts` as an operator's collector reads it: one
 * per restart the supervisor performs, labelled with the actor's id and the
 * code its incarnation ended with, the same as its `actor.restart` line.
 * Real worker threads and the misbehaving fixture actor; the SDK in process.
 */
import t from 'tap';
import type { ChildSpecInput } from '../../../runtime/supervisor/child-spec.ts';
import { Supervisor } from '../../../runtime/supervisor/supervisor.ts';
import { captureLog, until } from '../../helpers/log-capture.ts';
import { installTelemetrySdk } from '../../helpers/telemetry-sdk.ts';

const entry = new URL('../../fixtures/actors/misbehaving.ts', import.meta.url);
const fast = { baseMs: 20, factor: 2, maxMs: 200, jitter: 0.1, stableAfterMs: 60_000 };
const spec = (id: string): ChildSpecInput => ({ id, entry, restart: 'permanent', backoff: fast });

t.test('each restart counts once, by actor and the reason it ended', async (t) => {
  const sdk = installTelemetrySdk(t);
  const { log, events, write } = captureLog();
  const supervisor = new Supervisor({ log, hostLogSink: write });
  t.teardown(() => supervisor.stop(2_000));
  await supervisor.start([spec('crashy'), spec('quitter'), spec('steady')]);
  t.same(await sdk.pointsOf('mailcairn.supervisor.restarts'), [], 'nothing counted before a restart');

  for (let crash = 1; crash <= 2; crash++) {
    await supervisor
      .ref('crashy')
      .ask({ type: 'throw' })
      .catch(() => {});
    await until(() => events('actor.start', 'crashy').length === crash + 1, 10_000, `restart ${crash}`);
  }
  supervisor.ref('quitter').tell({ type: 'exit' });
  await until(() => events('actor.start', 'quitter').length === 2, 10_000, 'the quitter restarted');

  const points = await sdk.pointsOf('mailcairn.supervisor.restarts');
  t.same(
    points
      .map((p): Record<string, unknown> => ({ ...p.attributes, value: p.value }))
      .sort((a, b) => String(a['mailcairn.actor']).localeCompare(String(b['mailcairn.actor']))),
    [
      { 'mailcairn.actor': 'crashy', 'mailcairn.reason': 'E_ACTOR_CRASHED', value: 2 },
      { 'mailcairn.actor': 'quitter', 'mailcairn.reason': 'E_ACTOR_EXITED', value: 1 },
    ],
    'two crashes and one exit; the steady actor has no point',
  );
  t.equal(events('actor.restart', 'crashy').length, 2, 'as many as the restart lines');
});
