/**
 * `McpEndpoint:ClientCertificateProfiles[]`: client applications whose
 * certificates are accepted on `/mcp` (docs/configuration.md
 * "McpEndpoint:ClientCertificateProfiles"). Anchor material is read by the
 * listener, never here.
 */
import { z } from 'zod';
import { choice, dnsName, list, text } from './fields.ts';
import { NamedSecret } from './https.ts';

export const ClientCertificateProfile = z
  .strictObject({
    Name: text('Unique name; written <profile:Name> as a rate-limit partition', 128),
    Requirement: choice(['Required', 'Optional'], 'Required refuses a connection with no certificate; Optional serves it unidentified'),
    TrustAnchors: list(NamedSecret, 'Certificate authorities (PEM) a client certificate must chain to; several allow rotation by overlap').min(1, {
      error: 'must name at least one trust anchor',
    }),
    SubjectAlternativeNames: list(dnsName('An expected DNS name'), 'The certificate must carry at least one of these DNS names').min(1, {
      error: 'must name at least one DNS name',
    }),
  })
  .meta({ description: 'A client application whose certificates are accepted' });
