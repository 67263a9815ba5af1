/** What a pool thread receives as `workerData`, parsed again on its side (a thread boundary), as a host thread's is. */
import { z } from 'zod';
import { HostData } from '../host/host-data.ts';

export const PoolData = z.strictObject({
  /** The task module (source-task.mjs loads it when running from TypeScript). */
  entry: z.string(),
  /** Logging:Level, the same as the main thread's and the host threads'. */
  logLevel: HostData.shape.logLevel,
  /** What the task needs beyond its messages, parsed by the task itself (task.ts `poolConfig`). */
  config: z.unknown().optional(),
});
export type PoolData = z.infer<typeof PoolData>;
