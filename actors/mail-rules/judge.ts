/**
 * Judging one stored message against an account's mail rules: pure, no I/O
 * (docs/rules-and-spam.md "Mail rules").
 *
 * - Conditions of `When`: all written must hold. `SenderAddress` equals the
 *   sender's address, case-insensitively; `SenderDomain` equals the domain of
 *   the sender's address, case-insensitively and exactly (a rule for
 *   `example.com` does not match `news.example.com`: write a rule per
 *   domain, as Sieve's `:domain :is` does); `SubjectContains` is found in the
 *   subject, case-insensitively; `Folder` is the alias of the folder the
 *   message is stored in. The sender is the first address of the parsed
 *   `From` (the derivation writer's `from_json`); a message without one
 *   matches no sender condition.
 * - Rules run in the order written, each only for the accounts it names
 *   (every account when it names none).
 * - Stop-on-move, as Sieve's `fileinto` ends in practice: once a matching
 *   rule moves the message, later rules are not judged (they would act on a
 *   message that is no longer where they looked). Rules that only mark or
 *   label let later rules run.
 *
 * Importable by the mail-rules actor and its tests.
 */
import type { RuleSpec } from './protocol.ts';

/** What judging reads of a message. */
export type MessageFacts = {
  readonly account: string;
  /** Alias of the folder the message is stored in. */
  readonly folder: string;
  /** The first `From` address, as parsed; null when the message has none. */
  readonly sender: string | null;
  readonly subject: string | null;
};

/** What one matching rule asks: at least one field is set. */
export type RuleAsk = {
  moveTo?: string;
  seen?: true;
  flagged?: true;
  /** Lower case (the journal's keywords are folded), sorted, without repeats. */
  keywords?: string[];
};

export type Conclusion = {
  /** 1-based position of the rule in the configuration: the only way logs name a rule. */
  readonly position: number;
  readonly rule: string;
  readonly ask: RuleAsk;
};

/** The domain of an address: what follows its last `@`, lower case; null without one. */
export function domainOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  return at < 0 || at === address.length - 1 ? null : address.slice(at + 1).toLowerCase();
}

/** Whether every condition the rule writes holds for the message. */
export function matches(rule: RuleSpec, message: MessageFacts): boolean {
  const when = rule.conditions;
  const sender = message.sender?.toLowerCase() ?? null;
  if (when.senderAddress !== undefined && (sender === null || sender !== when.senderAddress.toLowerCase())) return false;
  if (when.senderDomain !== undefined && (sender === null || domainOf(sender) !== when.senderDomain.toLowerCase())) return false;
  if (when.subjectContains !== undefined && !(message.subject ?? '').toLowerCase().includes(when.subjectContains.toLowerCase())) return false;
  if (when.folder !== undefined && when.folder !== message.folder) return false;
  return true;
}

/** The rule's actions as a change request (keywords folded, sorted, unique). */
export function askOf(rule: RuleSpec): RuleAsk {
  const then = rule.actions;
  const ask: RuleAsk = {};
  if (then.moveTo !== undefined) ask.moveTo = then.moveTo;
  if (then.markSeen === true) ask.seen = true;
  if (then.markFlagged === true) ask.flagged = true;
  if (then.addKeywords !== undefined && then.addKeywords.length > 0) ask.keywords = [...new Set(then.addKeywords.map((k) => k.toLowerCase()))].sort();
  return ask;
}

/** Whether a rule applies to the account at all. */
export function appliesTo(rule: RuleSpec, account: string): boolean {
  return rule.accounts === null || rule.accounts.includes(account);
}

/** The conclusions of the account's rules for one message, in run order, stopping after the first that moves it. */
export function judge(rules: readonly RuleSpec[], message: MessageFacts): Conclusion[] {
  const conclusions: Conclusion[] = [];
  for (const [index, rule] of rules.entries()) {
    if (!appliesTo(rule, message.account) || !matches(rule, message)) continue;
    const ask = askOf(rule);
    conclusions.push({ position: index + 1, rule: rule.name, ask });
    if (ask.moveTo !== undefined) break;
  }
  return conclusions;
}
