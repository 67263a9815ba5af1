/** What a host thread receives as `workerData`, parsed again on its side (a thread boundary). */
import { z } from 'zod';
import { TelemetrySettings } from '../telemetry/settings.ts';

export const HostData = z.strictObject({
  hostId: z.string(),
  heartbeatMs: z.number().int().positive(),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
  /** fd: write straight to fd 1 (the service); parent: through the thread's stdout to the parent's log sink (tests). */
  logTo: z.enum(['fd', 'parent']),
  /** The service's resolved telemetry settings; null: telemetry is off and the thread loads no SDK (runtime/telemetry/host-sdk.ts). */
  telemetry: TelemetrySettings.nullable(),
});
export type HostData = z.infer<typeof HostData>;
