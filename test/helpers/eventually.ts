/**
 * Waiting in a test for something another process or thread will make true:
 * the probe is asked every `everyMs` until it answers a truthy value, which
 * is returned (a count of 0 keeps it waiting); after `timeoutMs` the wait
 * fails naming `what`. The bound is a failure's, never a measure of speed.
 * The 20 ms default matters to the kill -9 tests, which must see a change
 * reach the server and kill the daemon before it writes the completion.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 120_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
