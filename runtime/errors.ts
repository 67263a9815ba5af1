/**
 * The single error-code table of Mailcairn, and the one error class.
 *
 * Internal named codes (`E_*`) are what code switches on; `public` is the
 * five-digit code (docs/errors.md) that a
 * boundary shows to a client, where one applies. Nothing else invents codes:
 * `docs/errors.md` mirrors this table and a test keeps the two in step.
 *
 * Each surface reads its answer from here and nowhere else: an MCP tool
 * error shows `toldCode` (http/mcp/tool-result.ts); the administrative
 * surface answers `status`, with a problem document for a 4xx
 * (http/admin/failure-answer.ts). A message given to a 4xx code, or to one
 * a client is told, is a sentence written for that client: it reaches it.
 *
 * Errors cross threads as data (`ErrorPayload`), never as `Error` objects:
 * structured clone drops custom fields such as `code`.
 *
 * Importable from anywhere.
 */
import { z } from 'zod';

type Row = {
  /** HTTP status a boundary maps the code to when it surfaces on HTTP. */
  readonly status: number;
  /** Whether asking again later may succeed. */
  readonly retryable: boolean;
  /** Five-digit public code of the spec, or null when the code stays internal. */
  readonly public: number | null;
  /**
   * Set where a client is told only that something went wrong (54001) and
   * the error itself stays in the log: E_INTERNAL, whose message may quote
   * anything, and the chat provider's codes, which the spec keeps for the
   * log (docs/errors.md: 71001–73001 are logged, the client sees 54001).
   */
  readonly undiagnosed?: true;
  /** Constant message; never carries mail content, secrets or addresses. */
  readonly msg: string;
};

export const Codes = {
  // Configuration
  E_CONFIG_INVALID: { status: 500, retryable: false, public: null, msg: 'Configuration is invalid' },
  E_CONFIG_SECRET_UNREADABLE: { status: 500, retryable: false, public: null, msg: 'A secret reference could not be read' },

  // The HTTP edge: a request refused for its shape (a problem document on the administrative surface, empty on MCP)
  E_HTTP_BAD_REQUEST: { status: 400, retryable: false, public: null, msg: 'The request is invalid' },
  E_HTTP_BODY_TOO_LARGE: { status: 413, retryable: false, public: null, msg: "The request body is larger than the route's limit" },
  // The pipeline's own refusals, answered with an empty body (and a challenge, Allow or Retry-After where one applies)
  E_HTTP_UNAUTHENTICATED: { status: 401, retryable: false, public: null, msg: 'No credential, or one that was not admitted' },
  E_HTTP_ORIGIN_REFUSED: { status: 403, retryable: false, public: null, msg: "The request's Origin is not allowed" },
  E_HTTP_HOST_REFUSED: { status: 403, retryable: false, public: null, msg: "The request's Host names nothing this listener serves" },
  E_HTTP_CERTIFICATE_REFUSED: { status: 403, retryable: false, public: null, msg: 'No client certificate where one is required, or one no profile accepts' },
  E_HTTP_NO_ROUTE: { status: 404, retryable: false, public: null, msg: 'Nothing is served at this path' },
  E_HTTP_METHOD_NOT_ALLOWED: { status: 405, retryable: false, public: null, msg: 'This path does not take that method' },
  E_HTTP_RATE_LIMITED: { status: 429, retryable: true, public: null, msg: "The caller's rate limit is spent" },
  E_HTTP_REQUEST_TIMEOUT: { status: 504, retryable: true, public: null, msg: 'The request took longer than the request timeout' },

  // Protocol between threads
  E_PROTOCOL_INVALID: { status: 500, retryable: false, public: null, msg: 'A message between threads failed validation' },

  // Actors and the supervisor
  E_ACTOR_DOWN: { status: 503, retryable: true, public: null, msg: 'Actor stopped before replying' },
  E_ACTOR_TIMEOUT: { status: 504, retryable: true, public: null, msg: 'Actor did not reply in time' },
  E_ACTOR_MAILBOX_FULL: { status: 503, retryable: true, public: null, msg: 'Actor mailbox is full' },
  E_ACTOR_STOPPING: { status: 503, retryable: true, public: null, msg: 'Actor is stopping and takes no new messages' },
  E_ACTOR_CRASHED: { status: 500, retryable: true, public: null, msg: 'Actor handler failed unexpectedly' },
  E_ACTOR_HUNG: { status: 500, retryable: true, public: null, msg: 'Actor missed its heartbeats and was terminated' },
  E_ACTOR_EXITED: { status: 500, retryable: true, public: null, msg: 'Actor thread exited' },
  E_ACTOR_OUT_OF_MEMORY: { status: 500, retryable: true, public: null, msg: 'Actor thread exceeded its memory limit' },
  E_ACTOR_START_FAILED: { status: 500, retryable: true, public: null, msg: 'Actor failed to start' },

  // Storage
  E_STORE_LOCKED: { status: 500, retryable: false, public: null, msg: 'Another mailcairnd already holds the database' },
  E_STORE_MIGRATION: { status: 500, retryable: false, public: null, msg: 'A database migration failed' },
  E_STORE_UNAVAILABLE: { status: 503, retryable: true, public: null, msg: 'The database could not be opened' },
  E_STORE_UNSUPPORTED: { status: 500, retryable: false, public: null, msg: 'Storage:Database names something this build cannot use as its database' },
  // The disk under Storage:Database is full (SQLITE_FULL, ENOSPC): an outside condition, waited out (docs/operations.md "A full disk").
  E_STORE_FULL: {
    status: 507,
    retryable: true,
    public: 56003,
    msg: "The mail store's disk is full, so nothing new can be recorded now; reads still work. Try again once the operator has freed space",
  },

  // Key ring and sealing
  E_KEYRING_MISSING: { status: 500, retryable: false, public: null, msg: 'No data-encryption key ring is configured' },
  E_KEYRING_INVALID: { status: 500, retryable: false, public: null, msg: 'The key ring file is invalid' },
  E_KEYRING_UNKNOWN_KEY: { status: 500, retryable: false, public: null, msg: 'The sealed value names a key the key ring does not hold' },
  E_KEYRING_TAMPERED: { status: 500, retryable: false, public: null, msg: 'The sealed value failed authentication' },
  E_KEYRING_EXISTS: { status: 500, retryable: false, public: null, msg: 'A key ring file already exists there' },

  // IMAP (classified in one place: actors/imap-sync/connection.ts)
  E_IMAP_AUTH: { status: 502, retryable: false, public: null, msg: 'The mail server refused the login' },
  E_IMAP_UNRESPONSIVE: { status: 504, retryable: true, public: null, msg: 'The mail server did not answer' },
  E_IMAP_TLS: { status: 502, retryable: false, public: null, msg: "The mail server's certificate was not accepted" },
  E_IMAP_PROTOCOL: { status: 502, retryable: true, public: null, msg: 'The mail server answered in a way the client could not use' },
  // The token endpoint's answers (classified in one place: actors/imap-sync/token-answer.ts): refused credential, misconfiguration, outage
  E_OAUTH_REFRESH_MISSING: { status: 502, retryable: false, public: null, msg: 'No mailbox refresh token is stored for this account' },
  E_OAUTH_REFRESH_REFUSED: {
    status: 502,
    retryable: false,
    public: null,
    msg: 'The token endpoint refused the stored refresh token (revoked, expired or never issued); store a new one',
  },
  E_OAUTH_CLIENT_REFUSED: {
    status: 502,
    retryable: false,
    public: null,
    msg: 'The token endpoint refused the client (Imap:OAuth:ClientId or ClientSecret)',
  },
  E_OAUTH_MISCONFIGURED: {
    status: 502,
    retryable: false,
    public: null,
    msg: 'The token endpoint answered in a way that shows the OAuth settings are wrong (Imap:OAuth:TokenEndpoint or Scopes)',
  },
  E_OAUTH_UNAVAILABLE: { status: 504, retryable: true, public: null, msg: 'The token endpoint did not answer, or answered that it is unavailable' },
  // A dead-lettered mailbox change's failure code (actors/imap-sync/change-journal.ts): the server answered NO, so no retry.
  E_CHANGE_REFUSED: { status: 502, retryable: false, public: null, msg: 'The mail server refused the change' },

  // Embedding provider (classified in one place: actors/embedding/openai-compatible.ts; internal, never shown to agents)
  E_EMBED_CREDENTIAL_REFUSED: { status: 502, retryable: false, public: null, msg: 'The embedding provider refused the credential' },
  E_EMBED_RATE_LIMITED: { status: 503, retryable: true, public: null, msg: 'The embedding provider asked for fewer calls' },
  E_EMBED_UNAVAILABLE: { status: 504, retryable: true, public: null, msg: 'The embedding provider did not answer' },
  E_EMBED_MALFORMED: { status: 502, retryable: true, public: null, msg: 'The embedding provider answered in a way the client could not use' },
  E_EMBED_BAD_REQUEST: { status: 502, retryable: false, public: null, msg: 'The embedding provider refused the request' },
  E_EMBED_CIRCUIT_OPEN: { status: 503, retryable: true, public: null, msg: 'The embedding provider kept failing; calls to it are paused' },
  E_EMBED_NOT_DECLARED: {
    status: 400,
    retryable: false,
    public: null,
    msg: 'No embedding profile is declared: set Embeddings:Provider Local, or Embeddings:BaseAddress, Model and Dimensions',
  },

  // Synchronization
  E_SYNC_CONFLICT: { status: 409, retryable: true, public: null, msg: 'The folder checkpoint moved during the run (a rewind); the run deferred' },
  E_SYNC_FOLDER_MIRRORED: { status: 400, retryable: false, public: null, msg: 'The folder is still mirrored, so it cannot be erased' },

  // Application refusals (docs/admin-api.md "The pipeline")
  E_APP_REFUSED: { status: 403, retryable: false, public: 14001, msg: 'The operation is not permitted to this principal' },

  // Agent surface (docs/mcp-tools.md "Errors": one family of codes per kind of failure)
  E_TOOL_INVALID_INPUT: { status: 400, retryable: false, public: 51001, msg: 'The tool input is invalid' },
  E_TOOL_RESULT_LIMIT: { status: 400, retryable: false, public: 51003, msg: 'At most 50 ranked results may be requested' },
  E_TOOL_REQUEST_CONFLICT: {
    status: 409,
    retryable: false,
    public: 51004,
    msg: 'The requestId was already used for other changes; use a new requestId',
  },
  E_SEND_KEY_CONFLICT: {
    status: 409,
    retryable: false,
    public: 51005,
    msg: 'The idempotencyKey was already used for another message; use a new key',
  },
  E_CURSOR_INVALID: { status: 400, retryable: false, public: 52001, msg: 'The cursor is not one this service issued; start again without it' },
  E_CURSOR_FILTERS_CHANGED: {
    status: 400,
    retryable: false,
    public: 52002,
    msg: 'The cursor belongs to other filters or another direction; only pageSize may change between pages',
  },
  E_NOT_FOUND: { status: 404, retryable: false, public: 53001, msg: 'No such account, folder or email is available to this caller' },
  E_SEND_POLICY_REFUSED: { status: 403, retryable: false, public: 53002, msg: "A recipient is not permitted by this deployment's sending policy" },
  E_INTERNAL: { status: 500, retryable: false, public: 54001, undiagnosed: true, msg: 'Something went wrong; the reason is in the server log' },
  E_CONTENT_DAMAGED: { status: 500, retryable: false, public: 55001, msg: 'The stored content of this email is missing or damaged' },
  E_ASK_FAILED: { status: 502, retryable: true, public: 54001, msg: 'The question could not be answered; the reason is in the server log' },
  E_ASK_UNAVAILABLE: { status: 503, retryable: true, public: 56001, msg: 'Questions over mail cannot be answered now' },
  E_SEND_UNAVAILABLE: { status: 503, retryable: false, public: 56002, msg: 'This account cannot send mail: it has no SMTP server configured' },
  E_BUDGET_SPENT: { status: 429, retryable: true, public: 57001, msg: 'The allowance for this period is spent' },
  E_STATE_PASSED: {
    status: 409,
    retryable: false,
    public: 58001,
    msg: 'It is too late for that: transmission has begun or the message already ended',
  },
  E_CONTACT_COLLECTED: {
    status: 409,
    retryable: false,
    public: 58002,
    msg: 'A collected contact cannot be amended in place: promote it first (it then becomes an asserted contact)',
  },
  E_LLM_CREDENTIAL_REFUSED: { status: 502, retryable: false, public: 71001, undiagnosed: true, msg: 'The chat provider refused the credential' },
  E_LLM_NO_ANSWER: { status: 504, retryable: true, public: 72001, undiagnosed: true, msg: 'The chat provider did not answer' },
  E_LLM_NO_TEXT: { status: 502, retryable: true, public: 73001, undiagnosed: true, msg: 'The chat provider produced no text' },
} as const satisfies Record<string, Row>;

export type Code = keyof typeof Codes;
export const codeNames = Object.keys(Codes) as Code[];

export function isCode(value: string): value is Code {
  return Object.hasOwn(Codes, value);
}

/** The five-digit code a client is given for an undiagnosed failure: the reason is only in the log. */
export const UNDIAGNOSED = Codes.E_INTERNAL.public;

/**
 * The five-digit code a client is told for `code`, or null when the client
 * is told only that something went wrong (UNDIAGNOSED): the code is
 * internal, or its public code is for the log only.
 */
export function toldCode(code: Code): number | null {
  const row: Row = Codes[code];
  return row.undiagnosed === true ? null : row.public;
}

/** What crosses a thread boundary in place of an `Error`. */
export const ErrorPayload = z.strictObject({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
});
export type ErrorPayload = z.infer<typeof ErrorPayload>;

export type ErrorDetails = Record<string, string | number | boolean | null>;

export class AppError extends Error {
  readonly code: Code;
  readonly retryable: boolean;
  readonly details: ErrorDetails | undefined;

  constructor(code: Code, options: { message?: string; details?: ErrorDetails; cause?: unknown } = {}) {
    super(options.message ?? Codes[code].msg, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = Codes[code].retryable;
    this.details = options.details;
  }

  get status(): number {
    return Codes[this.code].status;
  }

  get publicCode(): number | null {
    return Codes[this.code].public;
  }
}

/** Turn anything thrown into the data that may cross a thread. Unknown errors become E_INTERNAL. */
export function toPayload(err: unknown): ErrorPayload {
  if (err instanceof AppError) {
    return {
      code: err.code,
      message: err.message,
      retryable: err.retryable,
      ...(err.details ? { details: err.details } : {}),
    };
  }
  return { code: 'E_INTERNAL', message: Codes.E_INTERNAL.msg, retryable: false };
}

/** Rebuild an AppError from a payload received from another thread. */
export function fromPayload(payload: ErrorPayload): AppError {
  const code: Code = isCode(payload.code) ? payload.code : 'E_INTERNAL';
  return new AppError(code, {
    message: payload.message,
    ...(payload.details ? { details: payload.details } : {}),
  });
}
