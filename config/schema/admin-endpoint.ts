/**
 * `AdminEndpoint`: the administrative listener (docs/admin-api.md "The
 * listener"). Same credential, limit and TLS shapes as `McpEndpoint`; no
 * `Transport` key: writing `Https:Endpoints` closes the clear-text route
 * listener and opens the redirect one (default port 8091):
 * docs/configuration.md "Listeners".
 */
import { z } from 'zod';
import { Connections } from './connections.ts';
import { CredentialEntry } from './credential-entry.ts';
import { bindAddress, flag, list, port } from './fields.ts';
import { https } from './https.ts';
import { RateLimiting } from './rate-limiting.ts';
import { RequestTimeout } from './request-timeout.ts';

export const AdminEndpoint = z
  .strictObject({
    Enabled: flag('Whether the administrative endpoint (/api/admin) is served').default(false),
    Authentication: list(CredentialEntry, 'Accepted credentials; OAuth Resource must end with /api/admin; empty serves anyone (startup warns)').default([]),
    RateLimiting: RateLimiting.prefault({}),
    RequestTimeout: RequestTimeout.prefault({}),
    Connections: Connections.prefault({}),
    BindAddress: bindAddress('Address of the clear-text listener (used while no Https profile is written)').default('127.0.0.1'),
    Port: port('Port of the clear-text listener (used while no Https profile is written)').default(8090),
    Https: https(8091).prefault({}),
  })
  .meta({ description: 'The administrative endpoint' });
