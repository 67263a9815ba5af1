/**
 * One element of `McpEndpoint:Authentication` or `AdminEndpoint:Authentication`:
 * the method blocks (`ApiKey`, `PublicKey`, `OAuth`; any combination, at
 * least one) and the optional `Permissions` grant. Shapes: docs/security.md
 * "Credential entries"; docs/admin-api.md "Credentials".
 *
 * Rules spanning values (an entry with no block, Resource agreement, names
 * and issuers unique, MetadataAddress on the issuer's host, the permission
 * list) are in `config/checks/authentication.ts` and `config/permissions.ts`,
 * because several of them depend on the surface. Key material is never read
 * here.
 */
import { z } from 'zod';
import { canonicalResource } from '../oauth-resource.ts';
import { httpUrl, lifetime, list, text } from './fields.ts';
import { secretRef } from './secret-ref.ts';

/** An API key or public key: named material behind a reference, with a lifetime. */
export function keyBlock(kind: 'API key' | 'PEM public key') {
  return z
    .strictObject({
      Name: text('What diagnostics, audit records and the rate-limit partition correlate on', 128),
      SecretReference: secretRef(`Where the ${kind} is read from; a rewritten file takes effect on the next request`),
      Lifetime: lifetime('NoLimit, or the instant after which the entry authenticates nothing'),
    })
    .meta({ description: `One ${kind}` });
}

const Scope = z
  .string({ error: 'must be text' })
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { error: 'must be one OAuth scope token (printable, no space, quote or backslash)' })
  .meta({ description: 'An OAuth scope' });

export const AuthorizationServer = z
  .strictObject({
    Name: text('Unique name of the server, used in diagnostics', 128),
    Issuer: httpUrl('Issuer identifier, copied verbatim (trailing slash included) and compared exactly with iss', {
      https: 'unless-loopback',
      plain: true,
    }),
    AuthorizedSubjects: list(text('A sub value', 512), 'The sub values accepted from this server (not email addresses); at least one').min(1, {
      error: 'must name at least one subject',
    }),
    MetadataAddress: httpUrl("Override of discovery; on the issuer's own host and port", { https: 'unless-loopback' }).optional(),
  })
  .meta({ description: 'An authorization server whose tokens the entry accepts' });

export const OAuth = z
  .strictObject({
    // Held in canonical form: what is published and compared with a token's aud.
    Resource: httpUrl('Canonical public URL of this resource in OAuth terms; every entry agrees on it', {
      https: 'always',
      plain: true,
    }).transform(canonicalResource),
    RequiredScopes: list(Scope, 'Scopes every token must carry').default([]),
    AdvertisedScopes: list(Scope, 'Scopes published for clients to request (e.g. offline access)').default([]),
    AuthorizationServers: list(AuthorizationServer, 'Servers whose tokens the entry accepts').min(1, {
      error: 'must name at least one authorization server',
    }),
  })
  .meta({ description: 'Token acceptance terms' });

export const CredentialEntry = z
  .strictObject({
    ApiKey: keyBlock('API key').optional(),
    PublicKey: keyBlock('PEM public key').optional(),
    OAuth: OAuth.optional(),
    Permissions: list(
      z.string({ error: 'must be text' }).meta({ description: 'A permission name, or a pattern where * stands for whole segments' }),
      'What the entry grants; absent grants the whole surface, [] grants nothing',
    ).optional(),
  })
  .meta({ description: 'One accepted credential; at least one method block' });

export type CredentialEntry = z.output<typeof CredentialEntry>;
