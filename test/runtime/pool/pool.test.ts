/** The piscina pool answers `ask` like an actor: replies, typed refusals, deadlines, bounded queue. */
import t from 'tap';
import { z } from 'zod';
import { createPool } from '../../../runtime/pool/pool.ts';
import { AppError } from '../../../runtime/errors.ts';

const entry = new URL('../../fixtures/pool/echo-task.ts', import.meta.url);

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof AppError ? err.code : `foreign: ${String(err)}`;
  }
}

t.test('a pool answers asks, moves buffers both ways, and maps failures to codes', async (t) => {
  const pool = createPool({ id: 'echo', entry, minThreads: 1, maxThreads: 2 });
  t.teardown(() => pool.close());
  t.same(await pool.ask({ type: 'echo', payload: { n: 1 } }), { n: 1 });
  t.equal(await pool.ask({ type: 'echo', payload: 'x' }, { reply: z.string() }), 'x');
  t.equal(await code(pool.ask({ type: 'echo', payload: 1 }, { reply: z.string() })), 'E_PROTOCOL_INVALID', 'a reply of the wrong shape');
  const bytes = new Uint8Array(64 * 1024).fill(9);
  const back = (await pool.ask({ type: 'bytes', bytes }, { transfer: [bytes.buffer] })) as Uint8Array;
  t.equal(bytes.byteLength, 0, 'moved to the pool, not copied');
  t.equal(back.byteLength, 64 * 1024);
  t.equal(await code(pool.ask({ type: 'unknown' })), 'E_PROTOCOL_INVALID');
  t.equal(await code(pool.ask({ type: 'app-error' })), 'E_TOOL_INVALID_INPUT');
  t.equal(await code(pool.ask({ type: 'throw' })), 'E_INTERNAL', 'an unexpected failure crosses as E_INTERNAL');
  t.equal(await code(pool.ask({ type: 'sleep', ms: 2_000 }, { deadlineMs: 100 })), 'E_ACTOR_TIMEOUT');
  t.equal(await code(pool.ask({ type: 'exit' })), 'E_ACTOR_DOWN', 'a pool thread that dies under a task');
  t.same(await pool.ask({ type: 'echo', payload: 'still serving' }), 'still serving');
});

t.test('a full pool queue refuses with E_ACTOR_MAILBOX_FULL', async (t) => {
  const pool = createPool({ id: 'tiny', entry, minThreads: 1, maxThreads: 1, maxQueue: 2 });
  t.teardown(() => pool.close());
  await pool.ask({ type: 'echo', payload: 'warm' });
  const running = [0, 1, 2].map(() => pool.ask({ type: 'sleep', ms: 300 }));
  t.equal(await code(pool.ask({ type: 'sleep', ms: 1 })), 'E_ACTOR_MAILBOX_FULL');
  t.same(await Promise.all(running), ['slept', 'slept', 'slept']);
});
