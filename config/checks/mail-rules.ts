/**
 * `MailRules` and `Spam` name accounts and folder aliases; those must exist,
 * or the rule would silently do nothing (or move mail nowhere). A rule needs
 * a condition and an action; names are unique (rule history keys on them).
 */
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

/** An IMAP keyword atom (RFC 3501), as the change journal takes it. */
const KEYWORD_ATOM = /^[^\s"(){%*\\\]\u0000-\u001f\u007f]+$/;
const MAX_RULE_KEYWORDS = 20;
const MAX_RULE_KEYWORD_LENGTH = 100;

export function mailRuleProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  const accounts = new Map(config.Accounts.map((account) => [account.Id, new Set(account.Folders.map((folder) => folder.Alias))]));
  const names = new Map<string, number>();
  config.MailRules.Rules.forEach((rule, index) => {
    const at = ['MailRules', 'Rules', index];
    const earlier = names.get(rule.Name);
    if (earlier !== undefined) problems.push(problem([...at, 'Name'], `repeats the name of MailRules:Rules:${earlier}`));
    else names.set(rule.Name, index);
    if (Object.values(rule.When).every((value) => value === undefined)) problems.push(problem([...at, 'When'], 'must state at least one condition'));
    const then = rule.Then;
    const acts = then.MoveTo !== undefined || then.MarkSeen === true || then.MarkFlagged === true || (then.AddKeywords?.length ?? 0) > 0;
    if (!acts) problems.push(problem([...at, 'Then'], 'must ask for at least one change'));
    // The change journal's own bounds on keywords (actors/imap-sync/protocol.ts): a rule it would refuse is refused here, at startup.
    if ((then.AddKeywords?.length ?? 0) > MAX_RULE_KEYWORDS)
      problems.push(problem([...at, 'Then', 'AddKeywords'], `holds more than ${MAX_RULE_KEYWORDS} keywords`));
    then.AddKeywords?.forEach((keyword, keywordIndex) => {
      if (keyword.length > MAX_RULE_KEYWORD_LENGTH || !KEYWORD_ATOM.test(keyword))
        problems.push(
          problem(
            [...at, 'Then', 'AddKeywords', keywordIndex],
            `must be one IMAP keyword of at most ${MAX_RULE_KEYWORD_LENGTH} characters, without spaces, quotes, parentheses, backslash or ] % * {`,
          ),
        );
    });
    const targets = rule.Accounts ?? [...accounts.keys()];
    rule.Accounts?.forEach((id, accountIndex) => {
      if (!accounts.has(id)) problems.push(problem([...at, 'Accounts', accountIndex], `names no configured account (${id})`));
    });
    for (const [key, alias] of [
      ['When', rule.When.Folder],
      ['Then', rule.Then.MoveTo],
    ] as const) {
      if (alias === undefined) continue;
      const missing = targets.filter((id) => accounts.get(id)?.has(alias) === false);
      if (missing.length > 0) {
        problems.push(problem([...at, key, key === 'When' ? 'Folder' : 'MoveTo'], `names alias ${alias}, which account(s) ${missing.join(', ')} do not map`));
      }
    }
  });
  const spam = config.Spam;
  if (spam.Enabled && spam.Action === 'Move') {
    const missing = config.Accounts.filter((account) => !account.Folders.some((folder) => folder.Alias === spam.Folder)).map((account) => account.Id);
    if (missing.length > 0) problems.push(problem('Spam:Folder', `names alias ${spam.Folder}, which account(s) ${missing.join(', ')} do not map`));
  }
  return problems;
}
