/**
 * Public surface of the mail-rules actor (`mail-rules`): one per deployment,
 * on the system actors' thread. It judges arriving mail against the
 * configured `MailRules` (while `MailRules:Enabled`), carries rule runs over
 * an account's stored mail (always: an admin run works with the arrival
 * stage off), and answers the rule listing. Every change a rule asks is
 * recorded through the account's sync actor (`imap-sync.record-changes`),
 * requester `rule:<Name>`; every conclusion is written to the rule history
 * (`mail_rule_history`, read by the query pool). docs/rules-and-spam.md is
 * the user's account.
 *
 * Privacy: no log line, error or message here carries a rule's name, a
 * condition's value, a keyword, a subject or an address; logs name a rule
 * by its 1-based position. Names appear only in admin answers, the history
 * and the audit's requester.
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { WorkProgress } from '../../runtime/work-progress.ts';

export const MAIL_RULES_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const MAIL_RULES_ID: ActorId<MailRulesProtocol> = 'mail-rules';

/** One rule as the actor takes it (config/schema/mail-rules.ts, keys in camel case); `accounts` null: every account. */
export const RuleSpec = z.strictObject({
  name: z.string().min(1),
  accounts: z.array(z.string()).nullable(),
  conditions: z.strictObject({
    senderAddress: z.string().optional(),
    senderDomain: z.string().optional(),
    subjectContains: z.string().optional(),
    folder: z.string().optional(),
  }),
  actions: z.strictObject({
    moveTo: z.string().optional(),
    markSeen: z.boolean().optional(),
    markFlagged: z.boolean().optional(),
    addKeywords: z.array(z.string()).optional(),
  }),
});
export type RuleSpec = z.infer<typeof RuleSpec>;

/**
 * Where the loaded rules came from, to tell whether the file on disk still
 * says the same: the configuration file (null: none was read), whether it
 * was named (a missing default file reads as `{}`), and the
 * `MAILCAIRN__MailRules__…` overrides the service started with.
 */
export const RulesSource = z.strictObject({
  file: z.string().nullable(),
  explicit: z.boolean(),
  overrides: z.record(z.string(), z.string()),
});
export type RulesSource = z.infer<typeof RulesSource>;

export const MailRulesConfig = z.strictObject({
  store: StoreSlice,
  /** `MailRules:Enabled`: judge arriving mail. */
  enabled: z.boolean(),
  rules: z.array(RuleSpec),
  /** The `MailRules` section as loaded (after defaults), compared with what the file says now. */
  loaded: z.unknown(),
  source: RulesSource,
  accounts: z.array(z.string().min(1)),
});
export type MailRulesConfig = z.infer<typeof MailRulesConfig>;

const Account = z.string().min(1);

/** A doorbell from the derivation writer: the account has newly derived mail (the stage reads what is missing). */
export const Derived = z.strictObject({ type: z.literal('mail-rules.derived'), account: Account });
export const StartRun = z.strictObject({ type: z.literal('mail-rules.start-run'), account: Account });
export const RunStatus = z.strictObject({ type: z.literal('mail-rules.run-status'), account: Account });
export const ListRules = z.strictObject({ type: z.literal('mail-rules.list') });

export const MailRulesMessage = z.discriminatedUnion('type', [Derived, StartRun, RunStatus, ListRules]);
export type MailRulesMessage = z.infer<typeof MailRulesMessage>;

const Count = z.number().int().nonnegative();
const Instant = z.iso.datetime();

/** A rule run: durable background work over one account's stored mail (docs/rules-and-spam.md "Rule runs"). */
export const RuleRun = z.strictObject({
  account: z.string(),
  runId: z.number().int().positive().describe('The run, stable and never reused'),
  requestedAt: Instant.describe('When the run was asked for'),
  isOutstanding: z.boolean().describe('True while the run is under way'),
  judgedEmailCount: Count.describe('Emails judged so far'),
  totalEmailCount: Count.describe('Emails the run covers: those stored when it was asked for, in folders rules judge'),
  matchedEmailCount: Count.describe('Emails at least one rule matched'),
  changeCount: Count.describe('Mailbox changes the run recorded'),
  progress: WorkProgress.describe('Progress as every long work reports it'),
  endedAt: Instant.nullable().describe('When the run ended; null while under way'),
  outcome: z.enum(['completed']).nullable().describe('How the run ended; null while under way'),
});
export type RuleRun = z.infer<typeof RuleRun>;

export const StartRunReply = z.strictObject({
  started: z.boolean().describe('This request started the run; false when it returned the run under way'),
  run: RuleRun,
});
export type StartRunReply = z.infer<typeof StartRunReply>;

export const RunStatusReply = z.strictObject({ run: RuleRun.nullable().describe("The account's latest run; null when none was ever asked for") });
export type RunStatusReply = z.infer<typeof RunStatusReply>;

/** One loaded rule, as the listing shows it (the configuration's own keys). */
export const ListedRule = z.strictObject({
  position: z.number().int().positive().describe('1-based place in run order'),
  name: z.string(),
  accounts: z.array(z.string()).nullable().describe('Accounts the rule applies to; null: every account'),
  conditions: z.record(z.string(), z.unknown()).describe("The rule's When section as written; all conditions must hold"),
  actions: z.record(z.string(), z.unknown()).describe("The rule's Then section as written: the changes asked for"),
});

/** `Equal`/`Differs`: the file's MailRules section now, against the loaded one; `Unknown` with a reason when it could not be read. */
export const RulesOnDisk = z.strictObject({
  state: z.enum(['Equal', 'Differs', 'Unknown']),
  reason: z.string().nullable().describe('Why the state is Unknown; null otherwise'),
});
export type RulesOnDisk = z.infer<typeof RulesOnDisk>;

export const ListRulesReply = z.strictObject({
  enabled: z.boolean().describe('MailRules:Enabled: whether rules judge arriving mail'),
  rules: z.array(ListedRule).describe('Loaded rules in run order'),
  configurationFile: RulesOnDisk.describe('Whether the configuration file on disk still says what the rules were read from'),
});
export type ListRulesReply = z.infer<typeof ListRulesReply>;

export type MailRulesProtocol = ProtocolOf<
  MailRulesMessage,
  {
    'mail-rules.derived': undefined;
    'mail-rules.start-run': StartRunReply;
    'mail-rules.run-status': RunStatusReply;
    'mail-rules.list': ListRulesReply;
  }
>;

/** The requester a rule's changes are recorded under (the mutation audit shows it). */
export const ruleRequester = (name: string): string => `mailcairn:rule:${name}`;
