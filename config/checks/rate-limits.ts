/**
 * The relations between rate-limit keys (docs/configuration.md "Rules
 * across settings"): a period never restores more than the bucket
 * holds, and one partition's queue can never hold every concurrency permit.
 * Checked on both endpoints, enabled or not: the values are wrong either way.
 */
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

export function rateLimitProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  for (const section of ['McpEndpoint', 'AdminEndpoint'] as const) {
    const limits = config[section].RateLimiting;
    if (limits.TokensPerReplenishmentPeriod > limits.TokenCapacity) {
      problems.push(
        problem(
          [section, 'RateLimiting', 'TokensPerReplenishmentPeriod'],
          `must be between 1 and TokenCapacity (${limits.TokenCapacity}) (was ${limits.TokensPerReplenishmentPeriod})`,
        ),
      );
    }
    if (limits.RequestQueueLimit > limits.MaxConcurrentRequests - 1) {
      problems.push(
        problem(
          [section, 'RateLimiting', 'RequestQueueLimit'],
          `must be between 0 and MaxConcurrentRequests minus 1 (${limits.MaxConcurrentRequests - 1}) (was ${limits.RequestQueueLimit})`,
        ),
      );
    }
  }
  return problems;
}
