/** The shape of a command's action: sade passes positionals then the options; `main.ts` turns them into a context. */
import type { Context } from '../context.ts';
import type { Options } from '../options.ts';

export type Command = (ctx: Context, options: Options, positionals: readonly (string | undefined)[]) => Promise<void>;
export type Run = (command: Command) => (...args: unknown[]) => Promise<void>;
