/**
 * `Spam` beyond single values: the keyword must be one the change journal
 * accepts (an IMAP keyword atom), and a trusted server is named once.
 * (`Spam:Folder` against the accounts' aliases: mail-rules.ts.)
 */
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

/** An IMAP keyword atom (RFC 3501), the journal's rule (actors/imap-sync/protocol.ts KEYWORD_ATOM). */
const KEYWORD_ATOM = /^[^\s"(){%*\\\]\u0000-\u001f\u007f]+$/;

export function spamProblems(config: Config): Problem[] {
  const spam = config.Spam;
  const problems: Problem[] = [];
  if (!KEYWORD_ATOM.test(spam.Keyword)) problems.push(problem('Spam:Keyword', 'must be an IMAP keyword: no space, quote, parenthesis, brace, %, *, \\ or ]'));
  const seen = new Set<string>();
  spam.TrustedServers.forEach((server, index) => {
    const host = server.Host.toLowerCase();
    if (seen.has(host)) problems.push(problem(['Spam', 'TrustedServers', index, 'Host'], 'repeats a server named earlier'));
    seen.add(host);
  });
  if (spam.Engine.RetryDelayMaximum < spam.Engine.RetryDelay) problems.push(problem('Spam:Engine:RetryDelayMaximum', 'must not be shorter than RetryDelay'));
  return problems;
}
