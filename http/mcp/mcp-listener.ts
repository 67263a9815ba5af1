/**
 * The MCP listener (`McpEndpoint`, clear text at BindAddress:Port): `/mcp`
 * (Streamable HTTP, stateless), `/attachments/{capability}`, `/readyz`, and
 * 404 for everything else — `/api/admin` first of all, before any credential
 * is looked at.
 *
 * `/mcp` runs the pipeline (http/pipeline.ts) then one MCP exchange; a
 * body past 1 MiB is an empty 413 that closes the connection, one nested
 * deeper than `MAX_JSON_DEPTH` a 400 with -32600 before the SDK sees it:
 * - POST carries JSON-RPC; a well-formed one is never answered 400, 404 or
 *   405 (clients read those as "fall back to the old transport");
 * - GET (a stream of server messages) and DELETE (end a session) answer 405
 *   with `Allow: POST`: the transport is stateless, so there is neither a
 *   stream to resume nor a session to end — what the SDK's client expects
 *   of a stateless server.
 *
 * Imports of the SDK stay under http/mcp/.
 */
import type { Context } from '@opentelemetry/api';
import { askingWithin, untraced } from '../../runtime/telemetry/tracing.ts';
import { isRecorded } from '../../runtime/telemetry/tracing.ts';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Config } from '../../config/schema.ts';
import type { AttachmentSourceProtocol } from '../../actors/mail-query/protocol/attachment-source.ts';
import type { EmailLookupProtocol } from '../../actors/mail-query/protocol/email-lookup.ts';
import type { MailReadsProtocol, RepairNeeded } from '../../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../../actors/mail-query/protocol/query-scope.ts';
import type { MimeParseProtocol } from '../../actors/mime-parse/protocol.ts';
import { type ChangeAsk, RecordChangesReply, RecordRepairsReply, syncActorId } from '../../actors/imap-sync/protocol.ts';
import type { ActorId, Askable, Protocol } from '../../runtime/ref.ts';
import { EMBEDDING_ID, PlacedQuery } from '../../actors/embedding/protocol.ts';
import { OUTBOX_ID } from '../../actors/outbox/protocol.ts';
import { CONTACTS_ID } from '../../actors/contacts/protocol.ts';
import { ANSWERING_ID, AskMailResult, Availability } from '../../actors/answering/protocol.ts';
import { AppError, Codes } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import { ATTACHMENT_ROUTE, isAttachmentPath, serveAttachment } from '../attachments/attachment-route.ts';
import { attachmentLink, canIssueLinks, createLinkKeyRing, issueCapability } from '../attachments/capability.ts';
import { redeemAttachment } from '../attachments/redeem.ts';
import { answerReadiness, type Readiness } from '../health/health-server.ts';
import { holds } from '../auth/principal.ts';
import type { Authenticate } from '../auth/authenticate.ts';
import { METADATA_PREFIX, metadataUrlOf, serveMetadata } from '../auth/oauth/metadata.ts';
import { createRateLimiter, describeLimits, partitionFor, type PartitionAdmission } from '../limits/rate-limiter.ts';
import { effectiveOrigin } from '../proxy.ts';
import { hostGuardOf } from '../host-guard.ts';
import {
  admit,
  admitCredential,
  ANSWERED,
  answerEmpty,
  clearTextServer,
  MAX_JSON_DEPTH,
  readJson,
  surfaceHandler,
  type ExchangeResponse,
  type SurfaceHandler,
} from '../pipeline.ts';
import { type ClientCertificateCheck, logCertificateRefusal, peerCertificateOf } from '../tls/client-certificates.ts';
import { answerPreflight, applyCors, decideOrigin } from './cors.ts';
import { handleMcpRequest } from './mcp-server.ts';
import { createPlacementGate } from './placement-gate.ts';
import type { Tool, ToolContext } from './tool.ts';
import { allTools } from './tools.ts';

/** A JSON-RPC body larger than this is refused 413: no tool input comes near it. */
const MAX_BODY_BYTES = 1024 * 1024;
/** How long `search_emails` waits for the embedding actor to place a query (never past the request's own deadline); then it answers lexically. */
export const PLACE_QUERY_DEADLINE_MS = 5_000;
/** How long `tools/list` waits to learn whether `ask_mail` is offered; past it the tool is not listed. */
const AVAILABILITY_DEADLINE_MS = 5_000;

export type McpListenerDeps = {
  config: Config;
  log: Logger;
  version: string;
  readiness(): Readiness;
  /** The read-only query pool. */
  queryPool: Askable<MailReadsProtocol & EmailLookupProtocol & AttachmentSourceProtocol>;
  /** A pool running the MIME parse task: decodes the attachment a link names (http/attachments/redeem.ts); the service gives downloads one of their own. */
  parsePool: Askable<MimeParseProtocol>;
  /** An actor by id (the account's sync actor records repair requests; the embedding actor places search queries). */
  actor<P extends Protocol>(id: ActorId<P>): Askable<P>;
  /** The authentication stage of this surface (http/auth/authenticate.ts). */
  authenticate: Authenticate;
  /** The client-certificate stage (http/tls/client-certificates.ts), when `ClientCertificateProfiles` are configured. */
  clientCertificates?: ClientCertificateCheck | null;
};

export function createMcpListener(deps: McpListenerDeps): Server {
  return clearTextServer(createMcpSurface(deps));
}

/** What the MCP surface answers, for every listener that serves it (clear text, or a TLS socket of its profiles). */
export function createMcpSurface(deps: McpListenerDeps): SurfaceHandler {
  const { config, log } = deps;
  const endpoint = config.McpEndpoint;
  const categories = endpoint.PublishedToolCategories;
  const offered = allTools.filter((tool) => categories === undefined || categories.includes(tool.category));
  const scope: QueryScope = { accounts: config.Accounts.map((a) => ({ id: a.Id, folders: a.Folders.map((f) => f.Alias) })) };
  const linksIssued = canIssueLinks(config);
  const linkRing = createLinkKeyRing(config);
  const limiter = createRateLimiter(endpoint.RateLimiting, { surface: 'mcp' });
  log.info({ event: 'limits.in-force', section: 'McpEndpoint', ...describeLimits(endpoint.RateLimiting, 'mcp') }, 'limits.in-force');
  const metadataUrl = metadataUrlOf(endpoint.Authentication);

  const baseContext: Pick<ToolContext, 'scope' | 'bodyCharacterBudget' | 'attachmentLink'> = {
    scope,
    bodyCharacterBudget: endpoint.Tools.BodyCharacterBudget,
    attachmentLink(ref) {
      if (!linksIssued) return null;
      const ring = linkRing.current();
      if (ring === null) return null;
      return attachmentLink(config.Deployment.PublicBaseAddress!, issueCapability(ring, ref, { now: Date.now() }));
    },
  };

  const limits = { limiter, timeout: endpoint.RequestTimeout };
  const placementGate = createPlacementGate();
  /**
   * Whether the last query placed found no generation serving (no embedding
   * model active, or no embedding actor): the next is then placed outside
   * the trace, as its `ask`/`handle embedding` spans would only say so
   * again. The answer after it decides for the one after (docs/operations.md
   * "Traces").
   */
  let placementInactive = false;
  const placeQueryTraced = async (asking: McpListenerDeps, text: string, deadlineMs: number): Promise<PlacedQuery> => {
    const placed = await (placementInactive ? untraced(() => placeQuery(deps, text, deadlineMs)) : placeQuery(asking, text, deadlineMs));
    placementInactive = placed.semanticSearch === 'inactive';
    return placed;
  };

  // origin → client certificate → authenticate → limit → authorize → route → body
  const mcp = async (req: IncomingMessage, res: ExchangeResponse, trace: Context): Promise<void> => {
    const origin = decideOrigin(req, endpoint.Cors.AllowedOrigins);
    if (origin.kind === 'refused') return answerEmpty(res, Codes.E_HTTP_ORIGIN_REFUSED.status);
    if (req.method === 'OPTIONS') return answerPreflight(res, origin);
    applyCors(res, origin);
    // Judged per request, not per handshake: a withdrawn client is refused on a kept-alive connection too.
    const certificate = deps.clientCertificates ? await deps.clientCertificates({ certificate: peerCertificateOf(req.socket as TLSSocket) }) : null;
    if (certificate?.kind === 'refused') {
      req.resume();
      logCertificateRefusal(log, certificate);
      return answerEmpty(res, Codes.E_HTTP_CERTIFICATE_REFUSED.status);
    }
    const judgement = await deps.authenticate(req, effectiveOrigin(req, config.ReverseProxy));
    // The key's name, else the certificate's profile (`<profile:name>`), else the shared anonymous partition.
    const partition: PartitionAdmission =
      judgement.kind === 'admitted' && judgement.partition.kind === 'api-key'
        ? judgement.partition
        : certificate?.kind === 'identified'
          ? { kind: 'certificate-profile', name: certificate.profile }
          : { kind: 'other' };
    const admitted = await admit(req, res, limits, partitionFor('mcp', partition));
    if (admitted === null) return;
    const principal = admitCredential(req, res, judgement, metadataUrl);
    if (principal === null) return;
    // A tool the grant does not permit is absent, and calling it reads like calling a tool that does not exist.
    const tools: Tool[] = offered.filter((tool) => holds(principal, tool.permission));
    const withheld: Tool[] = offered.filter((tool) => !holds(principal, tool.permission));
    if (req.method !== 'POST') return answerEmpty(res, Codes.E_HTTP_METHOD_NOT_ALLOWED.status, { Allow: 'POST' });
    const body = await readJson(req, res, MAX_BODY_BYTES);
    if (body.kind === 'gone' || admitted.timedOut()) return;
    if (body.kind === 'too-large') return answerEmpty(res, Codes.E_HTTP_BODY_TOO_LARGE.status);
    if (body.kind === 'malformed') return answerRefusal(res, -32700, 'Parse error: the body is not JSON');
    if (body.kind === 'too-deep') return answerRefusal(res, -32600, `Invalid Request: the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    // Every ask of the tool context names its parent (`within`): the trace does not follow awaits (runtime/telemetry/sync-context.ts).
    const toolContext = (within: Context): ToolContext => {
      const asking = withinTrace(deps, within);
      return {
        ...baseContext,
        queryPool: asking.queryPool,
        recordRepairs: (repairs) => recordRepairs(asking, repairs, 30_000),
        deadlineMs: admitted.deadlineMs,
        recordChanges: (accountId, request) => recordChanges(asking, accountId, { ...request, requester: principal.identity }, admitted.deadlineMs),
        caller: { identity: principal.identity, permissions: [...principal.permissions] },
        outbox: asking.actor(OUTBOX_ID),
        contacts: asking.actor(CONTACTS_ID),
        placeQuery: (text) => placeQueryTraced(asking, text, admitted.deadlineMs),
        placementGate,
        answering: {
          // A probe deciding whether `ask_mail` is listed: asked outside the trace (docs/operations.md "Traces"), its time is the request's.
          availability: () =>
            untraced(() => deps.actor(ANSWERING_ID).ask({ type: 'answering.availability' }, { reply: Availability, deadlineMs: AVAILABILITY_DEADLINE_MS })),
          ask: (input) => asking.actor(ANSWERING_ID).ask({ type: 'answering.ask', input, scope }, { reply: AskMailResult, deadlineMs: admitted.deadlineMs }),
        },
      };
    };
    await handleMcpRequest(req, res, body.value, {
      tools,
      withheld,
      principal,
      context: toolContext(trace),
      trace,
      within: toolContext,
      log,
      version: deps.version,
    });
  };

  // No credential: the capability is the authorization; the shared anonymous partition and the request timeout apply.
  const attachments = async (req: IncomingMessage, res: ExchangeResponse, trace: Context): Promise<void> => {
    const admitted = await admit(req, res, limits, partitionFor('mcp', { kind: 'other' }));
    if (admitted === null) return;
    await serveAttachment(req, res, {
      log,
      trace,
      keyRing: () => linkRing.fresh(),
      fetch: (claims) =>
        redeemAttachment(
          withinTrace(deps, trace),
          claims,
          scope.accounts.map((a) => a.id).filter((id) => id === claims.accountId),
          admitted.deadlineMs,
        ),
    });
  };

  return surfaceHandler({
    surface: 'mcp',
    hosts: hostGuardOf(config, 'McpEndpoint', log),
    route(req, res, path) {
      // Served only at the configured document's own path (serveMetadata compares it): that path is the template.
      if (path.startsWith(METADATA_PREFIX) && serveMetadata(req, res, effectiveOrigin(req, config.ReverseProxy), endpoint.Authentication))
        return { template: path, handler: ANSWERED };
      // `/api/admin` first of all: 404 before any credential is looked at.
      if (path === '/api/admin' || path.startsWith('/api/admin/')) return null;
      if (path === '/mcp') return { template: '/mcp', handler: mcp };
      if (isAttachmentPath(req.url)) return { template: ATTACHMENT_ROUTE, handler: attachments };
      if (path === '/readyz' && (req.method === 'GET' || req.method === 'HEAD'))
        return { template: '/readyz', handler: async () => answerReadiness(res, deps.readiness(), req.method === 'HEAD') };
      return null;
    },
    // Only the route template reaches the log: a path may carry a capability.
    failed: (err, { route, traceId }) => log.error({ err, event: 'http.failed', route, ...(traceId ? { traceId } : {}) }, 'http.failed'),
  });
}

/** `deps` whose asks are part of `trace` (runtime/telemetry/tracing.ts `askingWithin`); `deps` itself when `trace` records nothing. */
function withinTrace(deps: McpListenerDeps, trace: Context): McpListenerDeps {
  if (!isRecorded(trace)) return deps;
  return {
    ...deps,
    queryPool: askingWithin(deps.queryPool, trace),
    parsePool: askingWithin(deps.parsePool, trace),
    actor: (id) => askingWithin(deps.actor(id), trace),
  };
}

async function recordRepairs(deps: McpListenerDeps, repairs: readonly RepairNeeded[], deadlineMs: number): Promise<void> {
  const byAccount = new Map<string, RepairNeeded[]>();
  for (const repair of repairs) byAccount.set(repair.accountId, [...(byAccount.get(repair.accountId) ?? []), repair]);
  await Promise.all(
    [...byAccount].map(async ([account, list]) => {
      try {
        await deps
          .actor(syncActorId(account))
          .ask(
            { type: 'imap-sync.record-repairs', repairs: list.map((r) => ({ messageId: r.messageId, reason: r.reason })) },
            { reply: RecordRepairsReply, deadlineMs },
          );
      } catch (err) {
        // The answer still reports 55001; the next read finds the damage again and asks again.
        deps.log.warn({ err, event: 'mcp.repair-not-recorded', account }, 'mcp.repair-not-recorded');
      }
    }),
  );
}

/**
 * The query placed by the embedding actor, within PLACE_QUERY_DEADLINE_MS
 * and the request's deadline. Never rejects: the search answers lexically.
 * - No embedding actor running (E_ACTOR_DOWN: a part of the service started
 *   without it, or it is restarting after a crash, which the supervisor
 *   logs): `inactive`, no log line.
 * - Any other failure (its deadline, a full mailbox, a reply of the wrong
 *   shape): `degraded`, and one warn line with the failure code only (the
 *   query text never reaches a log).
 * Either way the query pool reads from its snapshot whether a generation
 * serves, and says `degraded` or `inactive` by that (mail-query/search.ts).
 */
async function placeQuery(deps: McpListenerDeps, text: string, deadlineMs: number): Promise<PlacedQuery> {
  try {
    return await deps
      .actor(EMBEDDING_ID)
      .ask({ type: 'embedding.place-query', text }, { reply: PlacedQuery, deadlineMs: Math.min(PLACE_QUERY_DEADLINE_MS, deadlineMs) });
  } catch (err) {
    const code = err instanceof AppError ? err.code : 'unexpected';
    if (code === 'E_ACTOR_DOWN') return { semanticSearch: 'inactive' };
    deps.log.warn({ event: 'mcp.query-not-placed', code }, 'mcp.query-not-placed');
    return { semanticSearch: 'degraded' };
  }
}

/** Changes of one email recorded by its account's sync actor; answered once durable. */
function recordChanges(
  deps: McpListenerDeps,
  accountId: string,
  request: { messageId: number; requestId: string | null; changes: ChangeAsk[]; requester: string },
  deadlineMs: number,
): Promise<RecordChangesReply> {
  return deps.actor(syncActorId(accountId)).ask({ type: 'imap-sync.record-changes', ...request }, { reply: RecordChangesReply, deadlineMs });
}

/** A body refused before any JSON-RPC handling: 400 with a JSON-RPC error of no id (as the SDK's transport answers). */
function answerRefusal(res: ServerResponse, code: number, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } });
  res.statusCode = Codes.E_HTTP_BAD_REQUEST.status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
