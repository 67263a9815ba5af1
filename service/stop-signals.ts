/**
 * SIGTERM and SIGINT from mailcairnd's first line on. Until a process has a
 * handler, Node ends it by the signal's default action: no drain, no
 * `service.stopping`. So `bin/mailcairnd.ts` holds the signals before it loads
 * anything else, and a signal that arrives before the service can act on it is
 * kept, not lost: the service claims them as its first step (`service/app.ts`)
 * and is handed what arrived meanwhile; every other command releases them back
 * to the default action. A second signal while one is held exits at once, as
 * it does once the service owns them.
 *
 * What Node runs before mailcairnd's first line (its own start, tens of
 * milliseconds) cannot be covered from JavaScript: a signal then ends the
 * process before it has opened anything (docs/operations.md).
 */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** The exit code of a second signal, the shell's for an interrupted command. */
export const EXIT_NOW_CODE = 130;

export type HeldSignals = {
  /** From now on `handler` receives every stop signal, first the one held (if any). */
  claim(handler: (signal: StopSignal) => void): void;
  /** Back to the default action; a signal already held ends the process now, as it would have. */
  release(): void;
};

export function holdStopSignals(): HeldSignals {
  let held: StopSignal | null = null;
  let handler: ((signal: StopSignal) => void) | null = null;
  const onSignal = (signal: StopSignal): void => {
    if (handler) handler(signal);
    else if (held) process.exit(EXIT_NOW_CODE);
    else held = signal;
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    claim(next) {
      handler = next;
      const first = held;
      held = null;
      if (first) next(first);
    },
    release() {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
      if (held) process.kill(process.pid, held);
    },
  };
}
