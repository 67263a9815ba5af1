/**
 * What startup has opened, closed in the reverse order by whichever ends it:
 * a stop, a start that failed, or a stop asked for while starting. Startup
 * pushes each closer right after the step that opened it, so the stop order
 * is never written a second time.
 */
export class Teardown {
  private readonly closers: Array<() => void | Promise<void>> = [];

  /** Run `close` when the service stops, before everything opened earlier. */
  push(close: () => void | Promise<void>): void {
    this.closers.push(close);
  }

  /**
   * Close everything pushed, newest first, each once. A closer that throws
   * does not keep the older ones open: they still run, then the first error
   * is thrown.
   */
  async run(): Promise<void> {
    const failures: unknown[] = [];
    for (let close = this.closers.pop(); close; close = this.closers.pop()) {
      try {
        await close();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
