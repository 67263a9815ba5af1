/**
 * `EmbeddingBackfill`: the background pass that embeds stored mail the
 * serving profile has not covered yet. `Enabled` is the spec's; the pacing
 * keys are ours.
 */
import { z } from 'zod';
import { flag, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const EmbeddingBackfill = z
  .strictObject({
    Enabled: flag('Whether stored mail is embedded in the background; false: no next pass').default(true),
    Interval: timeSpan('00:00:05', '1.00:00:00', 'Pause after a sweep that found nothing left to embed, or while the provider fails (ours)').prefault(
      '00:01:00',
    ),
    BatchSize: wholeNumber(1, 10_000, 'Messages embedded per pass; passes follow one another while mail is missing (ours)').default(100),
  })
  .meta({ description: 'Background embedding of stored mail' });
