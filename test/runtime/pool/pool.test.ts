/** The piscina pool answers `ask` like an actor: replies, typed refusals, deadlines, bounded queue. */
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { z } from 'zod';
import { createPool } from '../../../runtime/pool/pool.ts';
import { AppError } from '../../../runtime/errors.ts';
import { createLogger } from '../../../runtime/log.ts';

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

t.test('a thread that dies outside a task is logged and replaced; the process lives on', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'info', destination: { write: (line: string) => lines.push(JSON.parse(line)) } });
  // Not parked between tasks (as the query pool's threads are not), so the thread's timer runs.
  const pool = createPool({ id: 'dies-later', entry, minThreads: 1, maxThreads: 1, atomics: 'disabled', log });
  t.teardown(() => pool.close());
  t.equal(await pool.ask({ type: 'throw-later' }), 'answered');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && !lines.some((l) => l.event === 'pool.thread-failed')) await delay(20);
  const failed = lines.find((l) => l.event === 'pool.thread-failed');
  t.ok(failed, 'the death is logged');
  t.equal(failed?.level, 50, 'at error level');
  t.equal(failed?.pool, 'dies-later', 'naming the pool');
  t.same(await pool.ask({ type: 'echo', payload: 'served by the replacement' }), 'served by the replacement');
});

t.test('a pool started on its first ask has no thread before it, answers it, keeps its threads after, and refuses once closed', async (t) => {
  const pool = createPool({ id: 'on-demand', entry, minThreads: 1, maxThreads: 1, idleTimeoutMs: 10, startOnFirstAsk: true });
  t.teardown(() => pool.close());
  await delay(50);
  t.equal(pool.threads, 0, 'no thread before the first ask');
  t.same(await pool.ask({ type: 'echo', payload: 'first' }), 'first');
  await delay(100);
  t.equal(pool.threads, 1, 'minThreads kept after the first ask, past the idle timeout');
  const never = createPool({ id: 'never-asked', entry, startOnFirstAsk: true });
  await never.close();
  t.equal(await code(never.ask({ type: 'echo', payload: 'late' })), 'E_ACTOR_DOWN', 'a closed pool that never started refuses');
  t.equal(never.threads, 0);
});
