/**
 * `Spam`: classification of stored mail and what a spam verdict asks of the
 * mailbox. Runs are started through the admin route (dry run unless asked to
 * apply); `Enabled` also classifies arriving mail. Key names are ours.
 *
 * Two stages (docs/rules-and-spam.md "Spam"): verdict headers a trusted
 * receiving server wrote (`TrustedServers`, `TrustedHeaders`), then the
 * engine (`Engine`, rspamd's normal worker over HTTP). An engine score is
 * mapped to 0..1 as score / required score (rspamd's reject score), clamped;
 * mail whose mapped score reaches `Threshold` is judged spam.
 */
import { z } from 'zod';
import { choice, decimal, dnsName, flag, httpUrl, list, slug, text, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

/** The verdict headers the trusted-header stage reads, by the filter that writes them. */
export const TRUSTED_HEADER_KINDS = ['SpamAssassin', 'Rspamd'] as const;

const Engine = z
  .strictObject({
    Address: httpUrl("rspamd's normal worker (its /checkv2 protocol); clear text only to a loopback host", { https: 'unless-loopback', plain: true }).default(
      'http://127.0.0.1:11333',
    ),
    Timeout: timeSpan('00:00:01', '00:05:00', 'How long one classification call may take').prefault('00:00:30'),
    FailuresToOpen: wholeNumber(1, 100, 'Failed calls in a row after which calls are refused at once for CoolDown').default(5),
    CoolDown: timeSpan('00:00:01', '01:00:00', 'How long an open circuit refuses calls before one trial call').prefault('00:00:30'),
    RetryDelay: timeSpan('00:00:01', '01:00:00', 'First wait before mail left unclassified (engine down) is tried again; doubles per failed try').prefault(
      '00:00:15',
    ),
    RetryDelayMaximum: timeSpan('00:00:01', '1.00:00:00', 'Longest wait between two tries of unclassified mail').prefault('00:10:00'),
  })
  .meta({ description: 'The classification engine (rspamd), its deadline and circuit' });

const TrustedServer = z
  .strictObject({
    Host: dnsName('Host name the receiving server writes after `by` in its Received: header'),
  })
  .meta({ description: 'A receiving server whose verdict headers are believed' });

export const Spam = z
  .strictObject({
    Enabled: flag('Whether arriving mail is classified').default(false),
    Threshold: decimal(0, 1, 'Mapped score (0..1: score / required score) from which mail is judged spam').default(0.9),
    Action: choice(['None', 'Keyword', 'Move'], 'What a spam verdict asks: nothing, a keyword, or a move').default('Keyword'),
    Keyword: text('Keyword set by Action Keyword (an IMAP keyword atom; asked in lower case)', 100).default('$Junk'),
    Folder: slug('Folder alias mail is moved to by Action Move').default('junk'),
    Engine: Engine.prefault({}),
    TrustedServers: list(
      TrustedServer,
      'Receiving servers whose verdict headers are believed: only headers above the topmost Received: header, when that header was written by one of these',
    ).default([]),
    TrustedHeaders: list(
      choice(TRUSTED_HEADER_KINDS, 'A verdict header family'),
      'Which verdict headers a trusted server writes: SpamAssassin (X-Spam-Status, X-Spam-Flag), Rspamd (X-Spamd-Result, X-Rspamd-Score with X-Spam)',
    ).default(['SpamAssassin', 'Rspamd']),
  })
  .meta({ description: 'Spam classification (keys ours)' });
