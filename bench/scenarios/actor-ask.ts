/**
 * actor-ask: the round trip of `ask` to an actor on another thread (envelope
 * validated both ways, mailbox accounting, deadline timer, transfer of the
 * payload both ways), beside the ceiling measured in the same run: a bare
 * postMessage ping-pong with a worker that moves the buffer back. Goal:
 * within 1.5x of the ceiling at p50.
 */
import { performance } from 'node:perf_hooks';
import { createLogger } from '../../runtime/log.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ProtocolOf } from '../../runtime/ref.ts';
import { Supervisor } from '../../runtime/supervisor/supervisor.ts';
import { startWorker } from '../../runtime/worker-entry.ts';
import type { Row, Scenario } from '../scenario.ts';
import { formatBytes, round, summarize } from '../stats.ts';

type Send = (bytes: Uint8Array<ArrayBuffer>) => Promise<Uint8Array>;

const sizes = [
  { bytes: 100, iterations: 20_000 },
  { bytes: 64 * 1024, iterations: 10_000 },
  { bytes: 1024 * 1024, iterations: 2_000 },
];
const ROUNDS = 5;

async function sample(send: Send, size: number, iterations: number, into: number[]): Promise<number> {
  let wall = 0;
  for (let i = 0; i < iterations; i++) {
    const bytes = new Uint8Array(size);
    const start = performance.now();
    const back = await send(bytes);
    const elapsed = performance.now() - start;
    if (back.byteLength !== size) throw new Error('echo returned the wrong size');
    into.push(elapsed);
    wall += elapsed;
  }
  return wall;
}

function bareEcho(): { send: Send; close(): Promise<number> } {
  const worker = startWorker(moduleUrl('../fixtures/bare-echo-worker.ts', import.meta.url), {});
  let pending: ((b: Uint8Array) => void) | null = null;
  worker.on('message', (b: Uint8Array) => pending?.(b));
  return {
    send: (bytes) =>
      new Promise((resolve) => {
        pending = resolve;
        worker.postMessage(bytes, [bytes.buffer]);
      }),
    close: () => worker.terminate(),
  };
}

export const actorAsk: Scenario = {
  name: 'actor-ask',
  description: 'ask round trip vs bare postMessage ping-pong (same run), payload moved both ways',
  async run() {
    const supervisor = new Supervisor({ log: createLogger({ level: 'silent' }), hostLogLevel: 'silent' });
    await supervisor.start([{ id: 'echo', entry: moduleUrl('../fixtures/echo-actor.ts', import.meta.url), restart: 'permanent' }]);
    const ref = supervisor.ref<ProtocolOf<{ type: 'echo'; bytes: Uint8Array }, { echo: Uint8Array }>>('echo');
    const ask: Send = (bytes) => ref.ask({ type: 'echo', bytes }, { transfer: [bytes.buffer] });
    const bare = bareEcho();
    const rows: Row[] = [];
    try {
      for (const { bytes, iterations } of sizes) {
        await sample(ask, bytes, 500, []);
        await sample(bare.send, bytes, 500, []);
        const askSamples: number[] = [];
        const bareSamples: number[] = [];
        let askWall = 0;
        let bareWall = 0;
        // Alternate in rounds so drift in the machine's load hits both sides alike.
        for (let r = 0; r < ROUNDS; r++) {
          askWall += await sample(ask, bytes, iterations / ROUNDS, askSamples);
          bareWall += await sample(bare.send, bytes, iterations / ROUNDS, bareSamples);
        }
        const ours = summarize(askSamples, askWall);
        const ceiling = summarize(bareSamples, bareWall);
        rows.push({
          payload: formatBytes(bytes),
          'ask p50 µs': ours.p50Us,
          'ask p99 µs': ours.p99Us,
          'ask msg/s': ours.perSecond,
          'bare p50 µs': ceiling.p50Us,
          'bare p99 µs': ceiling.p99Us,
          'bare msg/s': ceiling.perSecond,
          'p50 ratio': round(ours.p50Us / ceiling.p50Us, 2),
        });
      }
    } finally {
      await bare.close();
      await supervisor.stop();
    }
    return rows;
  },
};
