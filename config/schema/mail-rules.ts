/**
 * `MailRules`: conditions over arriving mail and the mailbox changes they ask
 * for, run in the order written. Kept deliberately small: each rule has at
 * least one condition and one action (checked in `config/checks/mail-rules.ts`,
 * with the accounts and folder aliases a rule names). Values of conditions are
 * personal data and are never logged.
 */
import { z } from 'zod';
import { flag, list, slug, text } from './fields.ts';

const When = z
  .strictObject({
    SenderAddress: text('Sender address, compared case-insensitively', 320).optional(),
    SenderDomain: text('Domain of the sender address', 253).optional(),
    SubjectContains: text('Text the subject contains, case-insensitively', 512).optional(),
    Folder: slug('Alias of the folder the mail arrived in').optional(),
  })
  .meta({ description: 'Conditions; all written must hold' });

const Then = z
  .strictObject({
    MoveTo: slug('Alias of the folder to move the mail to').optional(),
    MarkSeen: flag('Set the seen flag').optional(),
    MarkFlagged: flag('Set the flagged flag').optional(),
    AddKeywords: list(text('An IMAP keyword', 128), 'Keywords to add').optional(),
  })
  .meta({ description: 'Mailbox changes asked for' });

export const MailRule = z
  .strictObject({
    Name: text('Unique name, shown in rule history', 128),
    Accounts: list(slug('An account Id'), 'Accounts the rule applies to; absent: every account').optional(),
    When,
    Then,
  })
  .meta({ description: 'One rule' });

export const MailRules = z
  .strictObject({
    Enabled: flag('Whether rules run on arriving mail').default(false),
    Rules: list(MailRule, 'Rules in run order').default([]),
  })
  .meta({ description: 'Mail rules (keys ours)' });
