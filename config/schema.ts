/**
 * The root of the configuration: every section, each optional with its
 * defaults applied, so `{}` is a whole configuration. Strict at every depth:
 * an unknown key anywhere is a refusal naming it.
 *
 * Importable from anywhere (`Config` is what every part is given).
 */
import { z } from 'zod';
import { Accounts } from './schema/accounts.ts';
import { AdminEndpoint } from './schema/admin-endpoint.ts';
import { Answering } from './schema/answering.ts';
import { DataEncryption } from './schema/data-encryption.ts';
import { Deployment } from './schema/deployment.ts';
import { EmbeddingBackfill } from './schema/embedding-backfill.ts';
import { Embeddings } from './schema/embeddings.ts';
import { HealthEndpoints } from './schema/health-endpoints.ts';
import { Logging } from './schema/logging.ts';
import { MailRules } from './schema/mail-rules.ts';
import { MailSynchronization } from './schema/mail-synchronization.ts';
import { McpEndpoint } from './schema/mcp-endpoint.ts';
import { Outbox } from './schema/outbox.ts';
import { ReverseProxy } from './schema/reverse-proxy.ts';
import { Spam } from './schema/spam.ts';
import { Storage } from './schema/storage.ts';
import { Telemetry } from './schema/telemetry.ts';

export const ConfigSchema = z.strictObject({
  McpEndpoint: McpEndpoint.prefault({}),
  AdminEndpoint: AdminEndpoint.prefault({}),
  HealthEndpoints: HealthEndpoints.prefault({}),
  ReverseProxy: ReverseProxy.prefault({}),
  Deployment: Deployment.prefault({}),
  MailSynchronization: MailSynchronization.prefault({}),
  Embeddings: Embeddings.prefault({}),
  EmbeddingBackfill: EmbeddingBackfill.prefault({}),
  Accounts: Accounts.default([]),
  Storage: Storage.prefault({}),
  DataEncryption: DataEncryption.prefault({}),
  Answering: Answering.prefault({}),
  Outbox: Outbox.prefault({}),
  MailRules: MailRules.prefault({}),
  Spam: Spam.prefault({}),
  Logging: Logging.prefault({}),
  Telemetry: Telemetry.prefault({}),
});

export type Config = z.output<typeof ConfigSchema>;

/** The section names, in the order the schema (and the docs) list them. */
export const sectionNames: readonly string[] = Object.keys(ConfigSchema.shape);
