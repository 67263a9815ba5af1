/** What a pool thread receives as `workerData`, parsed again on its side (a thread boundary), as a host thread's is. */
import { z } from 'zod';
import { HostData } from '../host/host-data.ts';

export const PoolData = z.strictObject({
  /** The task module (source-task.mjs loads it when running from TypeScript). */
  entry: z.string(),
  /** Logging:Level, the same as the main thread's and the host threads'. */
  logLevel: HostData.shape.logLevel,
});
export type PoolData = z.infer<typeof PoolData>;
