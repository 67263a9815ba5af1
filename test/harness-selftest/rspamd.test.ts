/**
 * The rspamd harness itself: a private engine on reserved ports answers
 * GTUBE with `reject` at its reject score and a plain message with no
 * action; stopped, nothing listens and no process of it is left; started
 * again, it answers on the same port.
 */
import { existsSync } from 'node:fs';
import t from 'tap';
import { startRspamd } from '../harness/rspamd.ts';
import { CLEAN_MESSAGE, GTUBE_MESSAGE } from '../helpers/spam-messages.ts';

t.setTimeout(240_000);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('starts, judges, stops by PID and starts again on the same port', async (t) => {
  const engine = await startRspamd();
  t.teardown(() => engine.close());
  const gtube = await engine.check(GTUBE_MESSAGE);
  t.equal(gtube.action, 'reject');
  t.equal(gtube.score, gtube.required_score, 'GTUBE scores the reject score');
  const clean = await engine.check(CLEAN_MESSAGE);
  t.equal(clean.action, 'no action');
  t.ok(clean.score < clean.required_score / 2, `a plain message scores low (${clean.score}/${clean.required_score})`);

  const pid = engine.pid;
  await engine.stop();
  t.notOk(alive(pid), 'the main process is gone');
  await t.rejects(fetch(`${engine.url}/ping`, { signal: AbortSignal.timeout(2_000) }), 'nothing listens once stopped');

  await engine.start();
  t.equal((await engine.check(GTUBE_MESSAGE)).action, 'reject', 'back on the same port');
  const dir = engine.dir;
  await engine.close();
  t.notOk(existsSync(dir), 'its directory is removed');
});
