/** What a host thread receives as `workerData`, parsed again on its side (a thread boundary). */
import { z } from 'zod';

export const HostData = z.strictObject({
  hostId: z.string(),
  heartbeatMs: z.number().int().positive(),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
});
export type HostData = z.infer<typeof HostData>;
