/**
 * The supervisor's log lines: the shape operators watch (docs/operations.md).
 * Exactly one line per event, always with the same members, so a query on
 * `event` and `actor` never has to guess. Never any message content.
 */
import type { Logger } from '../log.ts';

export const SupervisorEvents = {
  'actor.start': 'info',
  'actor.exit': 'warn',
  'actor.restart': 'info',
  'actor.give-up': 'error',
  'actor.hang': 'error',
} as const;
export type SupervisorEvent = keyof typeof SupervisorEvents;

export type EventFields = {
  actor: string;
  /** A code from runtime/errors.ts, or `initial`, `normal`, `shutdown`. */
  reason: string;
  /** Restarts performed for this child since the process started. */
  restarts: number;
  /** Delay before the next restart, or null when none is scheduled. */
  nextDelayMs: number | null;
  thread?: number | null;
  uptimeMs?: number | null;
};

export function logEvent(log: Logger, event: SupervisorEvent, fields: EventFields, level?: 'info' | 'warn' | 'error'): void {
  const line = {
    event,
    actor: fields.actor,
    reason: fields.reason,
    restarts: fields.restarts,
    nextDelayMs: fields.nextDelayMs,
    thread: fields.thread ?? null,
    uptimeMs: fields.uptimeMs ?? null,
  };
  log[level ?? SupervisorEvents[event]](line, event);
}

/** A host thread ended (its actors' own lines follow); `actors` is how many it carried. */
export function logHostExit(log: Logger, fields: { host: string; thread: number; reason: string; exitCode: number; actors: number }): void {
  log[fields.reason === 'shutdown' ? 'debug' : 'warn']({ event: 'host.exit', ...fields }, 'host.exit');
}
