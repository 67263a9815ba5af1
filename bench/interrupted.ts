/**
 * A scenario interrupted (Ctrl-C, SIGTERM) exits normally with 130, so the
 * harness's exit hooks (test/harness/processes.ts) stop what it started, by
 * PID, and remove its directories. Returns the function that lets go of the
 * signals again, for the scenario's `finally`.
 */
export function exitWhenInterrupted(scenario: string): () => void {
  const interrupted = (signal: NodeJS.Signals): void => {
    process.stderr.write(`[${scenario}] ${signal}: stopping\n`);
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  return () => {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  };
}
