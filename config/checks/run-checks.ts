/**
 * Every rule that spans more than one value, run over a configuration the
 * schema has accepted. Each returns problems; none throws or reads secrets.
 */
import type { Problem } from '../problem.ts';
import type { Config } from '../schema.ts';
import { accountProblems } from './accounts.ts';
import { authenticationProblems } from './authentication.ts';
import { backgroundWorkProblems } from './background-work.ts';
import { httpsProblems } from './https-profiles.ts';
import { mailRuleProblems } from './mail-rules.ts';
import { portProblems } from './ports.ts';
import { rateLimitProblems } from './rate-limits.ts';
import { reverseProxyProblems } from './reverse-proxy.ts';
import { spamProblems } from './spam.ts';
import { storageProblems } from './storage.ts';

export function runChecks(config: Config): Problem[] {
  return [
    ...authenticationProblems(config),
    ...rateLimitProblems(config),
    ...httpsProblems(config),
    ...portProblems(config),
    ...reverseProxyProblems(config),
    ...accountProblems(config),
    ...storageProblems(config),
    ...backgroundWorkProblems(config),
    ...mailRuleProblems(config),
    ...spamProblems(config),
  ];
}
