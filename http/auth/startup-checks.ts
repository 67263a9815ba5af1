/**
 * Startup checks of credential material, which read secrets and so live
 * here rather than in config/checks (configuration checks never read a
 * secret): every API key and public key of every enabled surface, refused by
 * position (`McpEndpoint:Authentication:0:PublicKey:SecretReference`). An
 * expired entry is not read and does not fail startup.
 */
import { readSecret } from '../../runtime/secret-ref.ts';
import type { Config } from '../../config/schema.ts';
import type { Problem } from '../../config/problem.ts';
import { apiKeyStartupProblems } from './api-key.ts';
import { serversOf } from './oauth/entries.ts';
import { publicKeyStartupProblems } from './public-keys.ts';

export function credentialProblems(config: Config, env: NodeJS.ProcessEnv, now = Date.now()): Problem[] {
  const problems: Problem[] = [];
  for (const surface of ['McpEndpoint', 'AdminEndpoint'] as const) {
    const section = config[surface];
    if (!section.Enabled) continue;
    const entries = section.Authentication;
    const read = (ref: string): string => readSecret(ref, env, `${surface}:Authentication`);
    const issuers = serversOf(entries).map((s) => s.Issuer);
    problems.push(
      ...apiKeyStartupProblems(
        surface,
        entries.map((e) => e.ApiKey),
        issuers,
        read,
        now,
      ),
      ...publicKeyStartupProblems(
        surface,
        entries.map((e) => e.PublicKey),
        read,
        now,
      ),
    );
  }
  return problems;
}
