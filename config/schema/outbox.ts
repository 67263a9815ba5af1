/**
 * `Outbox`: how recorded sends are offered to SMTP, and the send policy
 * (docs/sending.md). A message whose body began to go out is never retried
 * automatically (docs/sending.md "Stages"); the attempt bounds
 * apply to attempts that ended with an answer or never began.
 */
import { z } from 'zod';
import { choice, flag, list, text, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

const Entries = (what: string) => list(text(what, 254), what).default([]);

const RecipientPolicy = z
  .strictObject({
    AllowedDomains: Entries('Domains recipients may be in (`.example.org` also names its subdomains); empty with AllowedAddresses empty: any'),
    AllowedAddresses: Entries('Addresses that may be recipients besides the allowed domains'),
    DeniedDomains: Entries('Domains no recipient may be in; denied wins over allowed'),
    DeniedAddresses: Entries('Addresses that may never be recipients; denied wins over allowed'),
    Contacts: choice(
      ['Any', 'Asserted', 'AssertedOrCollected'],
      'Whether a recipient must be in the contact book: Any (no such rule), Asserted (an asserted contact holds the address) or AssertedOrCollected (any contact does); checked after the rules above',
    ).default('Any'),
  })
  .meta({ description: 'Who may receive mail from this deployment; one refused recipient refuses the whole message (ours)' });

const ceiling = (who: string) => wholeNumber(1, 1_000_000, `Sends ${who} may record per Period; absent: no ceiling`).optional();

const Ceilings = z
  .strictObject({
    Period: timeSpan('00:01:00', '31.00:00:00', 'The sliding window the ceilings count sends over').prefault('1.00:00:00'),
    PerAccount: ceiling('each account'),
    PerCaller: ceiling('each caller (credential)'),
    PerDeployment: ceiling('the whole deployment'),
  })
  .meta({ description: 'Send ceilings, counted from the recorded sends themselves, so a restart does not hand out a fresh allowance (ours)' });

const Retention = z
  .strictObject({
    EndedSends: timeSpan(
      '01:00:00',
      '3650.00:00:00',
      'How long a Sent, Refused or Cancelled send keeps its raw MIME and recipient addresses after it ended; then they are erased and a tombstone (stage, attempts, reply codes, the idempotency key) remains',
    ).prefault('30.00:00:00'),
    DeletedDrafts: timeSpan('01:00:00', '3650.00:00:00', 'How long a deleted draft keeps its raw MIME and recipients; then they are erased likewise').prefault(
      '7.00:00:00',
    ),
  })
  .meta({ description: 'How long the outbox keeps the content of records that ended (docs/sending.md "Retention"; ours)' });

export const Outbox = z
  .strictObject({
    Enabled: flag('Whether recorded sends are offered to SMTP; false keeps them Recorded').default(true),
    MaxAttempts: wholeNumber(1, 50, 'Attempts before a send is Refused').default(5),
    RetryDelay: timeSpan('00:00:01', '1.00:00:00', 'Delay before the next attempt, doubled per attempt').prefault('00:05:00'),
    SendTimeout: timeSpan('00:00:01', '00:30:00', 'How long one SMTP session may take').prefault('00:02:00'),
    Concurrency: wholeNumber(1, 64, 'Sends offered at once, across accounts').default(8),
    RecipientPolicy: RecipientPolicy.prefault({}),
    Ceilings: Ceilings.prefault({}),
    Retention: Retention.prefault({}),
  })
  .meta({ description: 'Sending (keys ours)' });
