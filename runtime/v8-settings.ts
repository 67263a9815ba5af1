/**
 * The V8 settings the service gives itself, once, before its first worker
 * thread (`applyV8Settings`, called by `startWorker` and `createPool`), each
 * measured on a first mirror (docs/performance.md, "The old-generation
 * floor"). An operator who passes the same V8 option on Node's command line
 * keeps theirs.
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
 * instead of 1, in about half of all runs. V8 reads it when it creates an
 * isolate, so the main thread's, made before, keeps its own limits.
 */
export const WORKER_OLD_SPACE_FLOOR_MIB = 64;

/*
 * Tried and not kept: TurboFan's inlining budget halved
 * (`--max-inlined-bytecode-size-cumulative=460`): 4.6% less CPU for one
 * 5,000-message mirror, but 6% more for 100 accounts in one process
 * (docs/performance.md, "The inlining budget, tried").
 */
const settings: ReadonlyArray<{ name: string; value: number }> = [{ name: 'initial-old-space-size', value: WORKER_OLD_SPACE_FLOOR_MIB }];

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
