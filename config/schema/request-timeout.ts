/**
 * `RequestTimeout` of an HTTP endpoint (McpEndpoint and AdminEndpoint each
 * carry their own): how long one request may run before it is abandoned
 * with 504 and its concurrency permit released. Keys: docs/security.md
 * "Request timeout".
 */
import { z } from 'zod';
import { flag } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const RequestTimeout = z
  .strictObject({
    Enabled: flag('Whether requests are bounded in time; false logs a startup warning').default(true),
    Duration: timeSpan('00:00:01', '01:00:00', 'How long one request may run before it is answered 504').prefault('00:10:00'),
  })
  .meta({ description: 'Bound on the time one request may run' });
