/**
 * `Outbox`: how recorded sends are offered to SMTP. A message whose body
 * began to go out is never retried automatically (admin-surface
 * "TransmissionBegun"); these bounds apply to attempts that never started.
 */
import { z } from 'zod';
import { flag, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const Outbox = z
  .strictObject({
    Enabled: flag('Whether recorded sends are offered to SMTP; false keeps them Recorded').default(true),
    MaxAttempts: wholeNumber(1, 50, 'Attempts before a send is Refused').default(5),
    RetryDelay: timeSpan('00:00:01', '1.00:00:00', 'Delay before the next attempt, doubled per attempt').prefault('00:05:00'),
    SendTimeout: timeSpan('00:00:05', '00:30:00', 'How long one SMTP session may take').prefault('00:02:00'),
  })
  .meta({ description: 'Sending (keys ours)' });
