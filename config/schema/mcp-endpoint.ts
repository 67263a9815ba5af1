/**
 * `McpEndpoint`: the agent-facing MCP listener (docs/configuration.md
 * "McpEndpoint"; docs/connecting-agents.md). Off by default, because it
 * exposes synchronized mailboxes to whoever can reach it. `Tools` is ours: the
 * character budget at which `get_email_content` cuts a body
 * (docs/mcp-read-tools.md).
 */
import { z } from 'zod';
import { Connections } from './connections.ts';
import { ClientCertificateProfile } from './client-certificate-profile.ts';
import { CredentialEntry } from './credential-entry.ts';
import { bindAddress, choice, flag, list, port, wholeNumber } from './fields.ts';
import { https } from './https.ts';
import { RateLimiting } from './rate-limiting.ts';
import { RequestTimeout } from './request-timeout.ts';

export const ToolCategories = ['mailbox', 'flags', 'sending', 'drafts', 'answering', 'contacts'] as const;

const Origin = z
  .string({ error: 'must be text' })
  .refine(
    (value) => {
      if (value === '*') return true;
      try {
        return new URL(value).origin === value;
      } catch {
        return false;
      }
    },
    { error: 'must be * or one origin written scheme://host[:port], lower case, with no path or trailing slash' },
  )
  .meta({ description: 'An origin, or * for every one' });

export const McpEndpoint = z
  .strictObject({
    Enabled: flag('Whether the MCP endpoint (/mcp) is served').default(false),
    Authentication: list(CredentialEntry, 'Accepted credentials, one entry per credential; empty serves anyone (startup warns)').default([]),
    Cors: z
      .strictObject({
        AllowedOrigins: list(Origin, 'Origins served: * every one, a list exactly those, [] none').default(['*']),
      })
      .meta({ description: 'Browser origin policy of /mcp' })
      .prefault({}),
    ClientCertificateProfiles: list(ClientCertificateProfile, 'Client applications whose certificates are accepted (needs a TLS transport)').default([]),
    RateLimiting: RateLimiting.prefault({}),
    RequestTimeout: RequestTimeout.prefault({}),
    Connections: Connections.prefault({}),
    BindAddress: bindAddress('Address of the clear-text listener (Transport Http)').default('0.0.0.0'),
    Port: port('Port of the clear-text listener (Transport Http)').default(8080),
    Transport: choice(
      ['Http', 'HttpsOnly', 'HttpAndHttps'],
      'Http: clear text at BindAddress:Port; HttpsOnly: only the Https profiles; HttpAndHttps: the profiles plus the Https:Redirect listener',
    ).default('Http'),
    Https: https(8080).prefault({}),
    PublishedToolCategories: list(
      choice(ToolCategories, 'A tool category'),
      'Narrows the tools offered to these categories; absent offers every category',
    ).optional(),
    Tools: z
      .strictObject({
        BodyCharacterBudget: wholeNumber(1_000, 1_000_000, 'Characters of a body get_email_content returns before cutting it (ours)').default(20_000),
      })
      .meta({ description: 'Tool behaviour (ours)' })
      .prefault({}),
  })
  .meta({ description: 'The agent (MCP) endpoint' });
