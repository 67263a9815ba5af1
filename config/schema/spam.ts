/**
 * `Spam`: classification of stored mail and what a spam verdict asks of the
 * mailbox. Runs are started through the admin route (dry run unless asked to
 * apply); `Enabled` also classifies arriving mail. Key names are ours.
 */
import { z } from 'zod';
import { choice, decimal, flag, slug, text } from './fields.ts';

export const Spam = z
  .strictObject({
    Enabled: flag('Whether arriving mail is classified').default(false),
    Threshold: decimal(0, 1, 'Score from which mail is judged spam').default(0.9),
    Action: choice(['None', 'Keyword', 'Move'], 'What a spam verdict asks: nothing, a keyword, or a move').default('Keyword'),
    Keyword: text('Keyword set by Action Keyword', 128).default('$Junk'),
    Folder: slug('Folder alias mail is moved to by Action Move').default('junk'),
  })
  .meta({ description: 'Spam classification (keys ours)' });
