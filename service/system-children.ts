/**
 * The supervision tree of the service, as data, in start order: the store
 * maintenance, the replay guard, the contact book, the derivation writer, the embedding actor, the answering actor, the mail-rules actor, the spam actor, one sync actor per
 * configured account (25 per thread, see docs/actors.md), the outbox, then
 * the synchronization scheduler that drives them.
 * Stopping runs in reverse: the scheduler first, then the accounts together.
 */
import type { Config } from '../config/schema.ts';
import { defaultMailPort, PLAIN_ADDRESS } from '../config/schema/accounts.ts';
import { IMAP_SYNC_ENTRY, syncActorId } from '../actors/imap-sync/protocol.ts';
import { SCHEDULER_ENTRY, SCHEDULER_ID } from '../actors/sync-scheduler/protocol.ts';
import { STORE_MAINTENANCE_ENTRY } from '../actors/store-maintenance/protocol.ts';
import type { ChildSpecInput } from '../runtime/supervisor/child-spec.ts';
import { storeSlice } from '../config/store-slice.ts';
import { replayGuardChild } from '../actors/replay-guard/protocol.ts';
import { type CollectionConfig, DERIVATION_ENTRY, DERIVATION_ID } from '../actors/derivation/protocol.ts';
import { OUTBOX_ENTRY, OUTBOX_ID, type OutboxConfig } from '../actors/outbox/protocol.ts';
import { senderAddress } from '../config/schema/accounts.ts';
import { EMBEDDING_ENTRY, EMBEDDING_ID, type EmbeddingConfig } from '../actors/embedding/protocol.ts';
import { defaultLocalThreads, LOCAL_DIMENSIONS, LOCAL_MODEL, passagesPerMessage } from '../config/schema/embeddings.ts';
import { ANSWERING_ENTRY, ANSWERING_ID, type AnsweringConfig } from '../actors/answering/protocol.ts';
import { contactsChild } from '../actors/contacts/protocol.ts';
import { MAIL_RULES_ENTRY, MAIL_RULES_ID, type MailRulesConfig, type RulesSource } from '../actors/mail-rules/protocol.ts';
import { SPAM_ENTRY, SPAM_ID, type SpamConfig } from '../actors/spam/protocol.ts';

export const STORE_MAINTENANCE_INTERVAL_MS = 10 * 60_000;
export const MIME_PARSE_POOL = 'mime-parse';
export const MAIL_QUERY_POOL = 'mail-query';
export const ACCOUNTS_PER_THREAD = 25;
/**
 * The young generation of the accounts and system threads, MiB: V8's default grows to 32 resident a thread
 * while raw mail passes through. At 16, one account's first mirror of 10,000 realistic messages peaked at
 * 264–291 MiB against 300–308, and of 50,000 at 305 MiB against 343, its CPU within the runs' spread
 * (docs/performance.md, MA54y). Measured with
 * glibc's allocator as the service is run (runtime/allocator-environment.ts): without those settings a
 * smaller young generation only moved the memory into malloc's heaps.
 */
export const HOST_YOUNG_GENERATION_MB = 16;
const HOST_LIMITS = { maxYoungGenerationSizeMb: HOST_YOUNG_GENERATION_MB } as const;
/**
 * The thread the system actors share (store maintenance, replay guard, contacts, derivation, answering, mail rules,
 * spam, outbox, scheduler; embedding without a declared profile): ten, so they stay on one thread.
 */
const SYSTEM_THREAD = { kind: 'shared', group: 'system', actorsPerThread: 10, resourceLimits: HOST_LIMITS } as const;

/** Restart policy of work that must come back however often it crashes: backoff up to a minute, never given up. */
const RETRIED_FOREVER = {
  backoff: { baseMs: 1_000, maxMs: 60_000, stableAfterMs: 60_000 },
  intensity: { maxRestarts: 1_000_000, windowMs: 60_000 },
} as const;

/** The longest a single run may take before the scheduler stops waiting (a first mirror of a very large mailbox is split into runs well below this). */
const RUN_DEADLINE_MS = 6 * 60 * 60_000;

/** Where the configuration was read from, for the rule listing's comparison with the file on disk (absent: unknown). */
export type ConfigSource = RulesSource;

export function systemChildren(config: Config, source?: ConfigSource): ChildSpecInput[] {
  const sync = config.MailSynchronization;
  const accounts: ChildSpecInput[] = config.Accounts.map((account) => ({
    id: syncActorId(account.Id),
    entry: IMAP_SYNC_ENTRY,
    restart: 'transient',
    shutdownMs: 5_000,
    placement: { kind: 'shared', group: 'accounts', actorsPerThread: ACCOUNTS_PER_THREAD, resourceLimits: HOST_LIMITS },
    // An account that keeps crashing is retried with backoff, never given up: a mail server outage is not ours to end.
    ...RETRIED_FOREVER,
    config: {
      account: account.Id,
      imap: {
        host: account.Imap.Host,
        port: account.Imap.Port ?? defaultMailPort('Imap', account.Imap.Security),
        security: account.Imap.Security,
        username: account.Imap.Username,
        ...(account.Imap.Password ? { passwordRef: account.Imap.Password } : {}),
        ...(account.Imap.TrustedCertificate ? { trustedCertificateRef: account.Imap.TrustedCertificate } : {}),
        ...(account.Imap.OAuth
          ? {
              oauth: {
                tokenEndpoint: account.Imap.OAuth.TokenEndpoint,
                clientId: account.Imap.OAuth.ClientId,
                ...(account.Imap.OAuth.ClientSecret ? { clientSecretRef: account.Imap.OAuth.ClientSecret } : {}),
                scopes: [...account.Imap.OAuth.Scopes],
              },
            }
          : {}),
      },
      folders: account.Folders.map((f) => ({ alias: f.Alias, path: f.Path ?? null })),
      store: storeSlice(config),
      ...(config.DataEncryption.KeyRing ? { keyRingRef: config.DataEncryption.KeyRing } : {}),
      batchSize: sync.BatchSize,
      maxMessageBytes: sync.MaxMessageBytes,
      connectTimeoutMs: sync.ConnectTimeout,
      commandTimeoutMs: sync.CommandTimeout,
      changeCheckMs: sync.ChangeCheckInterval,
      schedulerId: SCHEDULER_ID,
      parserId: MIME_PARSE_POOL,
      derivationId: DERIVATION_ID,
    },
  }));
  return [
    {
      id: 'store-maintenance',
      entry: STORE_MAINTENANCE_ENTRY,
      restart: 'permanent',
      shutdownMs: 5_000,
      placement: SYSTEM_THREAD,
      config: { ...storeSlice(config), intervalMs: STORE_MAINTENANCE_INTERVAL_MS, checkpointCheckMs: 1_000 },
    },
    replayGuardChild(storeSlice(config)),
    // A crash loop is retried with backoff, never given up: the book is in the database, and the contact tools and routes come back with it.
    { ...contactsChild(storeSlice(config)), ...RETRIED_FOREVER },
    {
      id: DERIVATION_ID,
      entry: DERIVATION_ENTRY,
      restart: 'permanent',
      shutdownMs: 5_000,
      // Beside the other system actors, off the accounts' threads: parsing and indexing run while they fetch and store.
      placement: SYSTEM_THREAD,
      // A crash loop is retried with backoff, never given up: stored mail waits, underived, meanwhile.
      ...RETRIED_FOREVER,
      config: { store: storeSlice(config), collection: collectionOf(config) },
    },
    embeddingChild(config),
    answeringChild(config),
    mailRulesChild(config, source),
    spamChild(config),
    ...accounts,
    outboxChild(config),
    {
      id: SCHEDULER_ID,
      entry: SCHEDULER_ENTRY,
      restart: 'permanent',
      shutdownMs: 2_000,
      placement: SYSTEM_THREAD,
      config: {
        accounts: config.Accounts.map((a) => a.Id),
        enabled: sync.Enabled,
        intervalMs: sync.Interval,
        maxConcurrent: sync.MaxConcurrentAccounts,
        backoffInitialMs: sync.Backoff.Initial,
        backoffMaxMs: sync.Backoff.Maximum,
        runDeadlineMs: RUN_DEADLINE_MS,
        store: storeSlice(config),
      },
    },
  ];
}

/**
 * Contact collection as the derivation writer takes it: the switch, and each
 * account's own addresses (its sender address and every login that is an
 * address), which are never collected (docs/contacts.md "Collection").
 */
function collectionOf(config: Config): CollectionConfig {
  return {
    enabled: config.MailSynchronization.CollectContacts,
    accounts: config.Accounts.map((account) => ({
      id: account.Id,
      ownAddresses: [account.Smtp?.From, account.Smtp?.Username, account.Imap.Username].filter((a): a is string => a !== undefined && PLAIN_ADDRESS.test(a)),
    })),
  };
}

/**
 * The mail-rules actor: one per deployment, on the system actors' thread (it
 * reads the store and asks the sync actors; the IMAP work is theirs). Always
 * started: a rule run works while `MailRules:Enabled` is false.
 */
function mailRulesChild(config: Config, source: ConfigSource | undefined): ChildSpecInput {
  const slice: MailRulesConfig = {
    store: storeSlice(config),
    enabled: config.MailRules.Enabled,
    rules: config.MailRules.Rules.map((rule) => ({
      name: rule.Name,
      accounts: rule.Accounts === undefined ? null : [...rule.Accounts],
      conditions: {
        ...(rule.When.SenderAddress !== undefined ? { senderAddress: rule.When.SenderAddress } : {}),
        ...(rule.When.SenderDomain !== undefined ? { senderDomain: rule.When.SenderDomain } : {}),
        ...(rule.When.SubjectContains !== undefined ? { subjectContains: rule.When.SubjectContains } : {}),
        ...(rule.When.Folder !== undefined ? { folder: rule.When.Folder } : {}),
      },
      actions: {
        ...(rule.Then.MoveTo !== undefined ? { moveTo: rule.Then.MoveTo } : {}),
        ...(rule.Then.MarkSeen !== undefined ? { markSeen: rule.Then.MarkSeen } : {}),
        ...(rule.Then.MarkFlagged !== undefined ? { markFlagged: rule.Then.MarkFlagged } : {}),
        ...(rule.Then.AddKeywords !== undefined ? { addKeywords: [...rule.Then.AddKeywords] } : {}),
      },
    })),
    loaded: config.MailRules,
    source: source ?? { file: null, explicit: false, overrides: {} },
    accounts: config.Accounts.map((a) => a.Id),
  };
  return {
    id: MAIL_RULES_ID,
    entry: MAIL_RULES_ENTRY,
    restart: 'permanent',
    shutdownMs: 5_000,
    placement: SYSTEM_THREAD,
    // A crash loop is retried with backoff, never given up: arrivals wait past the cursor, runs at their position.
    ...RETRIED_FOREVER,
    config: slice,
  };
}

/** The outbox: one per deployment, beside the accounts it files copies through (docs/sending.md). */
function outboxChild(config: Config): ChildSpecInput {
  const outbox = config.Outbox;
  const policy = outbox.RecipientPolicy;
  const slice: OutboxConfig = {
    store: storeSlice(config),
    enabled: outbox.Enabled,
    maxAttempts: outbox.MaxAttempts,
    retryDelayMs: outbox.RetryDelay,
    sendTimeoutMs: outbox.SendTimeout,
    concurrency: outbox.Concurrency,
    accounts: config.Accounts.map((account) => ({
      id: account.Id,
      address: senderAddress(account),
      syncActorId: syncActorId(account.Id),
      smtp: account.Smtp
        ? {
            host: account.Smtp.Host,
            port: account.Smtp.Port ?? defaultMailPort('Smtp', account.Smtp.Security),
            security: account.Smtp.Security,
            username: account.Smtp.Username,
            ...(account.Smtp.Password ? { passwordRef: account.Smtp.Password } : {}),
            ...(account.Smtp.TrustedCertificate ? { trustedCertificateRef: account.Smtp.TrustedCertificate } : {}),
            oauth: account.Smtp.OAuth !== undefined,
            sentCopy: account.Smtp.SentCopy,
          }
        : null,
    })),
    policy: {
      allowedDomains: [...policy.AllowedDomains],
      allowedAddresses: [...policy.AllowedAddresses],
      deniedDomains: [...policy.DeniedDomains],
      deniedAddresses: [...policy.DeniedAddresses],
      contacts: policy.Contacts,
    },
    ceilings: {
      periodMs: outbox.Ceilings.Period,
      perAccount: outbox.Ceilings.PerAccount ?? null,
      perCaller: outbox.Ceilings.PerCaller ?? null,
      perDeployment: outbox.Ceilings.PerDeployment ?? null,
    },
    retention: { endedSendsMs: outbox.Retention.EndedSends, deletedDraftsMs: outbox.Retention.DeletedDrafts },
  };
  return {
    id: OUTBOX_ID,
    entry: OUTBOX_ENTRY,
    restart: 'permanent',
    // An attempt under way is given this long to hear its answer before the thread goes.
    shutdownMs: 10_000,
    placement: SYSTEM_THREAD,
    // A crash loop is retried with backoff, never given up: sends wait durably meanwhile.
    ...RETRIED_FOREVER,
    config: slice,
  };
}

/** The declared embedding profile, as the embedding actor takes it (null: none declared). */
function declaredProfile(config: Config): EmbeddingConfig['declared'] {
  const e = config.Embeddings;
  const common = {
    apiKeyRef: e.ApiKey ?? null,
    requestTimeoutMs: e.RequestTimeout,
    batchSize: e.BatchSize,
    localThreads: 1,
    passagesPerMessage: passagesPerMessage(e),
  };
  const distance = e.Distance === 'L2' ? 'l2' : 'cosine';
  if (e.Provider === 'Local')
    return {
      ...common,
      localThreads: e.LocalThreads ?? defaultLocalThreads(),
      baseAddress: null,
      profile: { provider: 'local', model: LOCAL_MODEL, dimensions: LOCAL_DIMENSIONS, distance },
    };
  if (e.BaseAddress === undefined || e.Model === undefined || e.Dimensions === undefined) return null;
  return { ...common, baseAddress: e.BaseAddress, profile: { provider: 'openai-compatible', model: e.Model, dimensions: e.Dimensions, distance } };
}

function embeddingChild(config: Config): ChildSpecInput {
  const declared = declaredProfile(config);
  const slice: EmbeddingConfig = {
    store: storeSlice(config),
    declared,
    spend: { maxCharactersPerPeriod: config.Embeddings.MaxInputCharactersPerPeriod, periodMs: config.Embeddings.Period },
    backfill: { enabled: config.EmbeddingBackfill.Enabled, intervalMs: config.EmbeddingBackfill.Interval, batchSize: config.EmbeddingBackfill.BatchSize },
  };
  return {
    id: EMBEDDING_ID,
    entry: EMBEDDING_ENTRY,
    restart: 'permanent',
    shutdownMs: 5_000,
    // A declared profile computes (the local model, or waiting on a provider): a thread of its own, so the
    // system actors never wait behind it. With none declared it only answers "inactive": no isolate of its own.
    placement: declared === null ? SYSTEM_THREAD : { kind: 'dedicated' },
    // A crash loop is retried with backoff, never given up: unembedded mail waits meanwhile.
    ...RETRIED_FOREVER,
    config: slice,
  };
}

/** The answering actor: one per deployment, on the system actors' thread (a run mostly waits on the chat endpoint). */
function answeringChild(config: Config): ChildSpecInput {
  const a = config.Answering;
  const e = a.Endpoints[0];
  const slice: AnsweringConfig = {
    store: storeSlice(config),
    endpoint:
      e === undefined
        ? null
        : {
            alias: e.Alias,
            baseAddress: e.BaseAddress,
            model: e.Model,
            apiKeyRef: e.ApiKey ?? null,
            deadlineMs: e.Deadline,
            maxCalls: e.MaxCallsPerQuestion,
            maxInputCharacters: e.MaxInputCharactersPerQuestion,
          },
    allowance: { maxQuestions: a.MaxQuestionsPerPeriod, periodMs: a.Period },
    lookup: { passages: a.PassagesPerLookup, charactersPerPassage: a.CharactersPerPassage },
    audit: { enabled: a.Audit.Enabled, retentionMs: a.Audit.Retention },
    queryPoolId: MAIL_QUERY_POOL,
    embeddingId: EMBEDDING_ID,
  };
  return {
    id: ANSWERING_ID,
    entry: ANSWERING_ENTRY,
    restart: 'permanent',
    shutdownMs: 5_000,
    placement: SYSTEM_THREAD,
    ...RETRIED_FOREVER,
    config: slice,
  };
}

/** Spam classification: one per deployment, on the system actors' thread (a judgement mostly waits on the engine). Always runs: admin runs work with Spam:Enabled false. */
function spamChild(config: Config): ChildSpecInput {
  const s = config.Spam;
  const slice: SpamConfig = {
    store: storeSlice(config),
    enabled: s.Enabled,
    threshold: s.Threshold,
    action: s.Action,
    keyword: s.Keyword,
    folder: s.Folder,
    engine: {
      address: s.Engine.Address,
      timeoutMs: s.Engine.Timeout,
      failuresToOpen: s.Engine.FailuresToOpen,
      coolDownMs: s.Engine.CoolDown,
      retryDelayMs: s.Engine.RetryDelay,
      retryDelayMaxMs: s.Engine.RetryDelayMaximum,
    },
    trusted: { hosts: s.TrustedServers.map((server) => server.Host.toLowerCase()), headers: [...s.TrustedHeaders] },
    accounts: config.Accounts.map((a) => a.Id),
  };
  return {
    id: SPAM_ID,
    entry: SPAM_ENTRY,
    restart: 'permanent',
    shutdownMs: 5_000,
    placement: SYSTEM_THREAD,
    // A crash loop is retried with backoff, never given up: unjudged mail waits past the cursor meanwhile.
    ...RETRIED_FOREVER,
    config: slice,
  };
}
