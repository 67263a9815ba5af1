/**
 * Waiting in a test for something another process or thread will make true:
 * the probe is asked every 50 ms until it answers a value (anything but
 * null, undefined or false), which is returned; after `timeoutMs` the wait
 * fails naming `what`. The bound is a failure's, never a measure of speed.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
