/**
 * Entry of an actor host thread. A host runs many actors (one account's sync
 * actor next to dozens of others): it loads each actor's module on `start`,
 * routes envelopes to the actor's cell, and sends a heartbeat so the main
 * thread's watchdog can tell a blocked event loop from a quiet one.
 *
 * Signals never reach here (only the main thread sees them): stopping is a
 * `stop` envelope per actor, then the main thread ends the thread.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { isActorDefinition, type AnyActorDefinition } from '../actor.ts';
import { createLogger } from '../log.ts';
import { decodeToHost } from '../protocol/wire.ts';
import { ActorCell } from './actor-cell.ts';
import { HostData } from './host-data.ts';
import { HostLink } from './host-link.ts';

const data = HostData.parse(workerData);
const port = parentPort!;
const link = new HostLink(port, threadId);
const log = createLogger({ level: data.logLevel, format: 'Json', ...(data.logTo === 'parent' ? { destination: process.stdout } : {}) }).child({
  host: data.hostId,
  thread: threadId,
});
// Telemetry's modules load only when the service turned it on (runtime/telemetry/host-sdk.ts).
if (data.telemetry !== null) {
  const { installHostTelemetry } = await import('../telemetry/host-sdk.ts');
  const telemetry = await installHostTelemetry(data.telemetry, { log, post: (envelope) => link.post(envelope) });
  link.beforeEnd = () => telemetry.flush();
}
const cells = new Map<string, ActorCell>();
const definitions = new Map<string, Promise<AnyActorDefinition>>();

function loadDefinition(entry: string): Promise<AnyActorDefinition> {
  let loaded = definitions.get(entry);
  if (!loaded) {
    loaded = import(entry).then((module: Record<string, unknown>) => {
      const def = module.default;
      if (!isActorDefinition(def)) throw new Error('actor module has no default defineActor() export');
      return def;
    });
    definitions.set(entry, loaded);
  }
  return loaded;
}

async function startActor(actor: string, incarnation: number, entry: string, config: unknown): Promise<void> {
  let def: AnyActorDefinition;
  try {
    def = await loadDefinition(entry);
  } catch (err) {
    definitions.delete(entry);
    log.error({ err, event: 'actor.load-failed', actor }, 'actor module failed to load');
    link.post({ kind: 'crashed', actor, incarnation, error: { code: 'E_ACTOR_START_FAILED', message: 'Actor failed to start', retryable: true } });
    return;
  }
  const cell = new ActorCell({
    actorId: actor,
    incarnation,
    def,
    link,
    log: log.child({ actor }),
    onGone: () => {
      if (cells.get(actor) === cell) cells.delete(actor);
    },
  });
  cells.set(actor, cell);
  await cell.start(config);
}

port.on('message', (raw: unknown) => {
  const envelope = decodeToHost(raw);
  if (envelope === null) {
    const id = Array.isArray(raw) && typeof raw[1] === 'string' ? raw[1] : undefined;
    log.error({ event: 'protocol.invalid', envelope: id }, 'envelope from the main thread failed validation');
    return;
  }
  switch (envelope.kind) {
    case 'start':
      void startActor(envelope.actor, envelope.incarnation, envelope.entry, envelope.config);
      return;
    case 'stop': {
      const cell = cells.get(envelope.actor);
      if (cell) cell.stop();
      return;
    }
    case 'tell':
    case 'ask': {
      const cell = cells.get(envelope.to);
      if (cell) cell.deliver(envelope);
      else if (envelope.kind === 'ask')
        link.post({
          kind: 'reply',
          id: envelope.id,
          from: envelope.to,
          reply: { ok: false, error: { code: 'E_ACTOR_DOWN', message: 'Actor stopped before replying', retryable: true } },
        });
      return;
    }
    case 'reply':
      link.settle(envelope.id, envelope.reply);
      return;
  }
});

const beat = (): void => link.post({ kind: 'heartbeat', at: Date.now() });
setInterval(beat, data.heartbeatMs);
beat();
