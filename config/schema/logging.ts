/**
 * `Logging`: the pino root logger. `Auto` writes pretty lines to a terminal
 * and JSON otherwise.
 */
import { z } from 'zod';
import { choice } from './fields.ts';

export const Logging = z
  .strictObject({
    Level: choice(['trace', 'debug', 'info', 'warn', 'error', 'fatal'], 'Lowest level written').default('info'),
    Format: choice(['Auto', 'Json', 'Pretty'], 'Auto: Pretty on a terminal, Json otherwise').default('Auto'),
  })
  .meta({ description: 'Logging (keys ours)' });
