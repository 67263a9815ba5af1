/**
 * The V8 settings the service gives itself, once, before its first worker
 * thread (`applyV8Settings`, called by `startWorker` and `createPool`). Each
 * was measured on a first mirror (docs/performance.md, "The old-generation
 * floor", "The inlining budget" and "Peak memory at 50,000"). An operator
 * who passes the same V8 option on Node's command line keeps theirs.
 */
import v8 from 'node:v8';

/**
 * The old-generation limit below which no worker isolate's major collection
 * is scheduled (V8's `--initial-old-space-size`; measured, V8 keeps it as a
 * floor after collections too). Without it V8 sets a thread's limit about
 * 8 MiB above what survived its last major collection, and counts the
 * thread's live ArrayBuffers (raw mail held between fetch and store)
 * against that margin: the accounts thread then ran a major collection for
 * every 8 MiB of mail it took in, about 25 in a 5,000-message mirror
 * instead of 1, in about half of all runs. 32 MiB ends that as 64 did
 * (stop 46's table); 64 let the system thread carry up to 64 MiB of dead
 * derivations before its first collection, the peak of a 50,000-message
 * mirror (docs/performance.md, "Peak memory at 50,000"). V8 reads it when
 * it creates an isolate, so the main thread's, made before, keeps its own
 * limits.
 */
export const WORKER_OLD_SPACE_FLOOR_MIB = 32;

/**
 * How far an isolate's old generation may grow past what survived its last
 * major collection before the next one (V8's `--heap-growing-percent`: a
 * factor of 1 + this / 100). V8's own factor moves with the collector's
 * speed against the program's, up to 4 on a machine with this much memory:
 * the system thread, which promotes every derivation it writes, carried up
 * to three times its live heap in dead objects, the peak of a 50,000-message
 * mirror. At 100 (twice what survived) that peak fell by about 25 MiB for
 * the same CPU (docs/performance.md, "Peak memory at 50,000"). V8 reads it
 * at every collection, so it holds for every isolate, the main thread's too.
 */
export const HEAP_GROWING_PERCENT = 100;

/**
 * How much bytecode TurboFan may inline into one function it optimizes
 * (V8's `--max-inlined-bytecode-size-cumulative`, 920 by default). V8's
 * helper threads spent about a sixth of a first mirror's CPU compiling, most
 * of it on a few large functions (imapflow's response parser, MIME
 * decoding) with everything they call inlined, compiled again each time a
 * new shape of response deoptimized them. At 460 a first mirror of 10,000
 * realistic messages costs about 3% less CPU in the same wall time (300:
 * 4.6% at 5,000); 100 accounts in one process cost the same within the
 * noise; at 120 the code runs slower by what the compiler saves. V8 reads
 * it at each compile: every thread's optimizations from the call on.
 */
export const TURBOFAN_INLINING_BUDGET = 460;

const settings = [
  { name: 'initial-old-space-size', value: WORKER_OLD_SPACE_FLOOR_MIB },
  { name: 'heap-growing-percent', value: HEAP_GROWING_PERCENT },
  { name: 'max-inlined-bytecode-size-cumulative', value: TURBOFAN_INLINING_BUDGET },
] as const;

let applied = false;

/** Sets each V8 option the command line did not; once, and never changed back. */
export function applyV8Settings(): void {
  if (applied) return;
  applied = true;
  for (const option of v8Options(process.execArgv)) v8.setFlagsFromString(option);
}

/** The V8 options the service sets: each of its settings that Node's command line does not give. */
export function v8Options(commandLine: readonly string[]): string[] {
  return settings.filter(({ name }) => !givenOn(commandLine, name)).map(({ name, value }) => `--${name}=${value}`);
}

/** Whether the command line sets the option (V8 takes `-` and `_` alike in its names). */
export function givenOn(commandLine: readonly string[], name: string): boolean {
  const wanted = name.replaceAll('_', '-');
  return commandLine.some((arg) => arg.startsWith('--') && arg.slice(2).split('=')[0]!.replaceAll('_', '-') === wanted);
}
