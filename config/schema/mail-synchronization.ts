/**
 * `MailSynchronization`: how the sync actors mirror IMAP folders. The spec
 * names the section and `MaxConcurrentAccounts`; the other keys are ours,
 * chosen as a careful operator would expect (documented as such).
 */
import { z } from 'zod';
import { flag, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const MailSynchronization = z
  .strictObject({
    Enabled: flag('Whether mail is fetched at all; false keeps every figure still').default(true),
    Interval: timeSpan('00:00:10', '1.00:00:00', 'Pause between the runs of one account (ours)').prefault('00:05:00'),
    ChangeCheckInterval: timeSpan(
      '00:00:01',
      '01:00:00',
      'Between runs, how often every mapped folder is asked whether it changed on the server (NOOP, STATUS); a change starts a run, so it shows within seconds. Interval stays the fallback (ours)',
    ).prefault('00:00:05'),
    MaxConcurrentAccounts: wholeNumber(1, 500, 'Accounts synchronizing at once; others wait for a slot').default(4),
    MaxMessageBytes: wholeNumber(1_024, 1_073_741_824, 'Largest message stored; a larger one is counted as oversized (ours)').default(52_428_800),
    CollectContacts: flag(
      'Record the senders of arriving mail and the recipients of the owner\'s sent mail as collected contacts (docs/contacts.md "Collection"); false records none and leaves those already collected (ours)',
    ).default(true),
    BatchSize: wholeNumber(1, 5_000, 'Messages fetched and stored per transaction with the checkpoint (ours)').default(200),
    ConnectTimeout: timeSpan('00:00:01', '00:05:00', 'How long connecting and logging in may take (ours)').prefault('00:00:30'),
    CommandTimeout: timeSpan('00:00:01', '00:30:00', 'How long one IMAP command may go unanswered (ours)').prefault('00:02:00'),
    Backoff: z
      .strictObject({
        Initial: timeSpan('00:00:01', '01:00:00', 'Delay after the first failed run (ours)').prefault('00:00:30'),
        Maximum: timeSpan('00:00:01', '1.00:00:00', 'Largest delay between failed runs; at least Initial (ours)').prefault('01:00:00'),
      })
      .meta({ description: 'Delay after failed runs, doubled per failure with jitter (ours)' })
      .prefault({}),
  })
  .meta({ description: 'Mirroring of IMAP folders' });
