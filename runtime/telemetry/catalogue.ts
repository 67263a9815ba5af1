/**
 * Every metric Mailcairn records, as one table: the name, the instrument,
 * the unit, what it counts and the labels a point may carry. The docs
 * (docs/operations.md "Metrics") are written from it, the instruments are
 * made from it (instruments.ts), and a measurement forwarded from an actor
 * thread is recorded by looking its name up here.
 *
 * Names follow OpenTelemetry's semantic conventions where one exists
 * (`http.server.request.duration`, `mcp.server.operation.duration`), the
 * framework's rate-limiting set under `service.` (http/limits/metrics.ts),
 * and `mailcairn.` otherwise. A label holds a configured identifier (an
 * account id, a folder alias, an actor name, a policy name), a route
 * template, a tool name, a permission or a code: never an address, a
 * subject, a query, a message id or a capability.
 */

/**
 * `observed-counter` and `observed-updown` are read by a callback at each
 * collection from figures the code keeps itself (plain integers): they
 * export the same series as a counter or an up-down counter, without an SDK
 * record (a label hash) on the request path (docs/performance.md "Telemetry").
 */
export type InstrumentKind = 'counter' | 'updown' | 'observed-counter' | 'observed-updown' | 'histogram' | 'gauge';

export type MetricDefinition = {
  readonly name: string;
  readonly kind: InstrumentKind;
  readonly unit: string;
  readonly description: string;
  /** The labels a point may carry, for the docs and the label scan of the tests. */
  readonly labels: readonly string[];
  /** Where it is recorded, for the docs: the thread and the module. */
  readonly source: string;
};

function define<const T extends Record<string, MetricDefinition>>(table: T): T {
  return table;
}

export const METRICS = define({
  httpServerDuration: {
    name: 'http.server.request.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Duration of HTTP requests answered, by surface, route template and status',
    labels: ['mailcairn.surface', 'http.request.method', 'http.route', 'http.response.status_code'],
    source: 'every listener (http/pipeline.ts)',
  },
  mcpOperationDuration: {
    name: 'mcp.server.operation.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Duration of MCP tool calls, by tool and outcome',
    labels: ['mcp.method.name', 'gen_ai.tool.name', 'mailcairn.outcome', 'error.type'],
    source: 'the MCP endpoint (http/mcp/mcp-server.ts)',
  },
  authorizationRefusals: {
    name: 'service.authorization.refusals',
    kind: 'counter',
    unit: '{refusal}',
    description: 'Requests refused for a permission the caller does not hold, once per refusal',
    labels: ['surface', 'target', 'permission'],
    source: 'both endpoints (http/auth/principal.ts)',
  },
  rateLimitRequests: {
    name: 'service.rate_limiting.requests',
    kind: 'observed-counter',
    unit: '{request}',
    description: 'Requests that reached the rate limiter, by result (every result but acquired is a rejection)',
    labels: ['policy', 'result'],
    source: 'both endpoints (http/limits/metrics.ts)',
  },
  rateLimitActiveLeases: {
    name: 'service.rate_limiting.active_request_leases',
    kind: 'observed-updown',
    unit: '{request}',
    description: 'Requests holding a rate-limiter lease',
    labels: ['policy'],
    source: 'both endpoints (http/limits/metrics.ts)',
  },
  rateLimitQueued: {
    name: 'service.rate_limiting.queued_requests',
    kind: 'observed-updown',
    unit: '{request}',
    description: 'Requests waiting for a token or a concurrency permit',
    labels: ['policy'],
    source: 'both endpoints (http/limits/metrics.ts)',
  },
  rateLimitTimeInQueue: {
    name: 'service.rate_limiting.request.time_in_queue',
    kind: 'histogram',
    unit: 's',
    description: 'Time a request waited in a rate-limiter queue',
    labels: ['policy', 'result'],
    source: 'both endpoints (http/limits/metrics.ts)',
  },
  rateLimitLeaseDuration: {
    name: 'service.rate_limiting.request_lease.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Time a request held its rate-limiter lease',
    labels: ['policy'],
    source: 'both endpoints (http/limits/metrics.ts)',
  },
  supervisorRestarts: {
    name: 'mailcairn.supervisor.restarts',
    kind: 'counter',
    unit: '{restart}',
    description: 'Actors restarted by their supervisor, by actor and the code of what ended it',
    labels: ['mailcairn.actor', 'mailcairn.reason'],
    source: 'the supervisor (runtime/supervisor)',
  },
  syncRunDuration: {
    name: 'mailcairn.sync.run.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Duration of synchronization runs of one folder, by outcome',
    labels: ['mailcairn.account', 'mailcairn.folder', 'mailcairn.outcome'],
    source: "the account's sync actor (actors/imap-sync), forwarded from its thread",
  },
  mailboxMessages: {
    name: 'mailcairn.mailbox.messages',
    kind: 'gauge',
    unit: '{message}',
    description: 'Messages stored, per account and folder',
    labels: ['mailcairn.account', 'mailcairn.folder'],
    source: 'read from the store at collection',
  },
  mailboxUnindexed: {
    name: 'mailcairn.mailbox.unindexed',
    kind: 'gauge',
    unit: '{message}',
    description: 'Messages stored but not yet derived into the search index, per account and folder',
    labels: ['mailcairn.account', 'mailcairn.folder'],
    source: 'read from the store at collection',
  },
  mailboxFreshnessLag: {
    name: 'mailcairn.mailbox.freshness_lag',
    kind: 'gauge',
    unit: 's',
    description: 'Time since the last completed synchronization run, per account and folder',
    labels: ['mailcairn.account', 'mailcairn.folder'],
    source: 'read from the store at collection',
  },
  changeJournalEntries: {
    name: 'mailcairn.change_journal.entries',
    kind: 'gauge',
    unit: '{entry}',
    description: 'Mailbox changes in the change journal, per account and state',
    labels: ['mailcairn.account', 'mailcairn.state'],
    source: 'read from the store at collection',
  },
  outboxSends: {
    name: 'mailcairn.outbox.sends',
    kind: 'gauge',
    unit: '{send}',
    description: 'Sends in the outbox, per account and stage',
    labels: ['mailcairn.account', 'mailcairn.stage'],
    source: 'read from the store at collection',
  },
  embeddingCoverage: {
    name: 'mailcairn.embedding.coverage',
    kind: 'gauge',
    unit: '1',
    description:
      'Share of the stored passages to embed (Embeddings:PassagesPerMessage of each message) the serving embedding generation has embedded (0 to 1; 0 with no generation serving)',
    labels: [],
    source: 'read from the store at collection',
  },
  embeddingSpend: {
    name: 'mailcairn.embedding.spent',
    kind: 'gauge',
    unit: '{character}',
    description: 'Input characters sent to the embedding provider in the current period',
    labels: [],
    source: 'read from the store at collection',
  },
  storeSize: {
    name: 'mailcairn.store.size',
    kind: 'gauge',
    unit: 'By',
    description: 'Size of the database file and its write-ahead log',
    labels: [],
    source: 'read from the file system at collection',
  },
});

export type MetricKey = keyof typeof METRICS;

const BY_NAME: ReadonlyMap<string, MetricDefinition> = new Map(Object.values(METRICS).map((d) => [d.name, d]));

/** A catalogue entry by its exported name (a measurement forwarded from an actor thread). */
export function definitionNamed(name: string): MetricDefinition | undefined {
  return BY_NAME.get(name);
}
