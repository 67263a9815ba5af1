/**
 * Shared helpers of the configuration tests: a valid configuration that has
 * one element in every list whose elements carry ranged settings, and ways to
 * validate a tree and read back its problems as lines.
 */
import { AppError } from '../../runtime/errors.ts';
import { validateConfig } from '../../config/load.ts';
import { formatProblem } from '../../config/problem.ts';

export function profile(name: string, domain: string, port = 8443): Record<string, unknown> {
  return {
    Name: name,
    Domain: domain,
    Port: port,
    ServerCertificate: {
      CertificateChain: { Name: `${name}-chain`, SecretReference: `file:/etc/tls/${name}.pem` },
      PrivateKey: { Name: `${name}-key`, SecretReference: `file:/etc/tls/${name}.key` },
    },
  };
}

/** Every list that holds ranged settings has one valid element; every endpoint is disabled, so no port collides. */
export function richConfig(): Record<string, unknown> {
  return {
    McpEndpoint: { Transport: 'HttpAndHttps', Https: { Endpoints: [profile('mcp', 'mcp.example.org')], Redirect: {} } },
    AdminEndpoint: { Https: { Endpoints: [profile('admin', 'admin.example.org', 9443)], Redirect: {} } },
    HealthEndpoints: { Enabled: false, Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', 'health.example.org', 10443)] } },
    Accounts: [
      {
        Id: 'alice',
        Imap: { Host: 'imap.example.org', Username: 'alice', Password: 'env:ALICE_IMAP' },
        Smtp: { Host: 'smtp.example.org', Username: 'alice', Password: 'env:ALICE_IMAP', From: 'alice@example.org' },
        Folders: [{ Alias: 'inbox', Path: 'INBOX' }],
      },
    ],
    Answering: { Endpoints: [{ Alias: 'primary', BaseAddress: 'https://chat.example.org/v1', Model: 'chat-model' }] },
    Embeddings: { BaseAddress: 'https://embed.example.org/v1', Model: 'embed-model', Dimensions: 3 },
  };
}

/** Problems of a tree as printed lines; empty when it is accepted. */
export function problemLines(raw: unknown): string[] {
  const result = validateConfig(raw);
  return result.ok ? [] : result.problems.map(formatProblem);
}

/** Runs `fn`, expecting an AppError with `code`; returns its message lines. */
export function refusalLines(fn: () => unknown, code: AppError['code'] = 'E_CONFIG_INVALID'): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError && err.code === code) return err.message.split('\n');
    throw err;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

/** Sets a value at a `Section:Key:0:Sub` path, creating objects and lists on the way. */
export function setAt(tree: Record<string, unknown>, setting: string, value: unknown): Record<string, unknown> {
  const segments = setting.split(':');
  let current: Record<string, unknown> = tree;
  segments.slice(0, -1).forEach((segment, index) => {
    const next = current[segment];
    if (next === null || typeof next !== 'object') current[segment] = /^\d+$/.test(segments[index + 1] ?? '') ? [] : {};
    current = current[segment] as Record<string, unknown>;
  });
  current[segments[segments.length - 1] ?? ''] = value;
  return tree;
}
