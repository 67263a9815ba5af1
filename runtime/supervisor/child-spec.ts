/**
 * Child specs are data: what to start, how to restart it, how long it may
 * take to stop, where it runs and with what memory. Parsed with zod so a
 * wrong spec fails at startup, not at the first crash.
 *
 * Restart types follow OTP: `permanent` is always restarted; `transient` only
 * after a crash (an actor that stops itself on purpose, such as after an
 * authentication failure it recorded, stays down until an operator acts);
 * `temporary` never.
 *
 * Placement: `dedicated` gives the actor a thread of its own (and its own
 * memory limit); `shared` packs up to `actorsPerThread` actors of one group
 * onto each thread, so five hundred accounts need tens of threads, not
 * hundreds. See docs/actors.md for the figures behind the default.
 */
import { z } from 'zod';
import { BackoffPolicy } from './backoff.ts';
import { IntensityPolicy } from './intensity.ts';

export const ResourceLimits = z.strictObject({
  maxOldGenerationSizeMb: z.number().positive().optional(),
  maxYoungGenerationSizeMb: z.number().positive().optional(),
  codeRangeSizeMb: z.number().positive().optional(),
  stackSizeMb: z.number().positive().optional(),
});
export type ResourceLimits = z.infer<typeof ResourceLimits>;

export const Placement = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('dedicated'), resourceLimits: ResourceLimits.optional() }),
  z.strictObject({
    kind: z.literal('shared'),
    group: z.string().min(1),
    actorsPerThread: z.number().int().min(1).max(10_000),
    resourceLimits: ResourceLimits.optional(),
  }),
]);
export type Placement = z.infer<typeof Placement>;

export const RestartType = z.enum(['permanent', 'transient', 'temporary']);
export type RestartType = z.infer<typeof RestartType>;

export const ChildSpec = z.strictObject({
  id: z.string().min(1).max(200),
  /** Module whose default export is a `defineActor(...)` value. */
  entry: z.union([z.string(), z.instanceof(URL)]).transform((e) => (typeof e === 'string' ? e : e.href)),
  /** The actor's configuration slice; its own schema parses it again in the thread. */
  config: z.unknown().optional(),
  restart: RestartType,
  shutdownMs: z.number().int().positive().default(5_000),
  startTimeoutMs: z.number().int().positive().default(30_000),
  mailboxCapacity: z.number().int().positive().default(1_000),
  backoff: BackoffPolicy.default(BackoffPolicy.parse({})),
  intensity: IntensityPolicy.default(IntensityPolicy.parse({})),
  placement: Placement.default({ kind: 'dedicated' }),
});
export type ChildSpecInput = z.input<typeof ChildSpec>;
export type ChildSpec = z.output<typeof ChildSpec>;
