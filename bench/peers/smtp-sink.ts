/**
 * The harness SMTP server (test/harness/smtp-server.ts) in a process of its
 * own, for benchmarks: the sending side under test and its peer then share
 * no event loop and no CPU accounting with it. Spawned with an IPC channel
 * (`startSinkProcess`); it answers `{ type: 'ready', port, certificatePem }`
 * and then, for each message kept, `{ type: 'delivered', recipients, at }`
 * where `at` is `performance.timeOrigin + performance.now()` taken as the
 * message is kept, just before its 250 is written: the parent compares it
 * with its own clock read the same way. It keeps no message (a benchmark
 * sends thousands).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startSmtpServer, type SmtpSecurity } from '../../test/harness/smtp-server.ts';

export type SinkOptions = { security: SmtpSecurity; auth?: { username: string; password: string } };
export type SinkDelivery = { recipients: string[]; at: number };
export type SinkProcess = {
  pid: number;
  port: number;
  certificatePem: string;
  /** Each message as it is kept; replaceable. */
  onDelivery: (d: SinkDelivery) => void;
  stop(): Promise<void>;
};

/** The epoch, in milliseconds with a fraction, on the monotonic clock: comparable across this machine's processes. */
export const now = (): number => performance.timeOrigin + performance.now();

export async function startSinkProcess(options: SinkOptions): Promise<SinkProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const sink = {} as SinkProcess;
  const ready = new Promise<{ port: number; certificatePem: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the SMTP sink exited (${code}) before it was ready`)));
    child.on('message', (m: { type: string; port?: number; certificatePem?: string } & SinkDelivery) => {
      if (m.type === 'ready') resolve({ port: m.port!, certificatePem: m.certificatePem! });
      else if (m.type === 'delivered') sink.onDelivery({ recipients: m.recipients, at: m.at });
    });
  });
  const { port, certificatePem } = await ready;
  return Object.assign(sink, {
    pid: child.pid!,
    port,
    certificatePem,
    onDelivery: () => {},
    async stop() {
      child.send({ type: 'stop' });
      await exited;
    },
  });
}

// As the child: serve until told to stop.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const options = JSON.parse(process.argv[2]!) as SinkOptions;
  const server = await startSmtpServer({
    ...options,
    onDelivery: (d) => {
      const at = now();
      process.send!({ type: 'delivered', recipients: d.recipients, at });
    },
  });
  // Nothing is kept here: the parent is told.
  const keep = server.deliveries;
  const forget = setInterval(() => keep.splice(0), 1_000);
  process.on('message', async (m: { type: string }) => {
    if (m.type !== 'stop') return;
    clearInterval(forget);
    await server.stop();
    process.disconnect();
    process.exit(0);
  });
  process.send({ type: 'ready', port: server.port, certificatePem: server.certificatePem });
}
