/**
 * One MCP exchange: a fresh SDK `Server` and a stateless JSON transport
 * (json-exchange.ts: the SDK's Streamable HTTP answers without its Web
 * Request/Response conversions) for every request, dropped when the response ends. Never a
 * shared server object: one shared across requests has leaked one client's
 * answers to another in the SDK's history.
 *
 * The low-level `Server` is used (not `McpServer`) so that this module owns
 * what agents see: the published input schemas (zod → JSON Schema), the
 * error results of DECISIONS.md, and the one answer for a tool that is
 * unknown or not granted (-32602). A request's params of the wrong shape
 * are -32602 before the SDK sees them (request-params.ts); a call's
 * arguments are checked by its tool's schema (tool.ts `defineTool`: 51001
 * naming what failed).
 *
 * Telemetry: each tool call is logged once with the tool's name, whether it
 * ended in error (with its five-digit code), and its duration; nothing the
 * caller wrote. The same call is one INTERNAL span `tools/call <tool>`
 * (a child of the request's span) and one `mcp.server.operation.duration`
 * point (tool-call-telemetry.ts). An undiagnosed failure is logged at error
 * level (class, code and frames: runtime/log.ts) with a trace id the caller
 * also receives, and answered 54001: the trace id of the call's span when
 * traces are recorded, so the log line, the answer and the exported span
 * share it. Which code a failure shows is the error table's (tool-result.ts
 * `toolFailure`).
 */
import { type Context, context } from '@opentelemetry/api';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool as PublishedTool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import { holds, recordRefusal, type Principal } from '../auth/principal.ts';
import { JsonExchangeTransport } from './json-exchange.ts';
import { admitMessage } from './request-params.ts';
import { toolFailure, toolSuccess } from './tool-result.ts';
import { type ObservedToolCall, observeToolCall } from './tool-call-telemetry.ts';
import type { Tool, ToolContext } from './tool.ts';

export type McpExchange = {
  /** The tools this caller may see and call (already narrowed by deployment and grant). */
  tools: readonly Tool[];
  /** Tools this deployment offers that the caller's grant withholds: calling one is a refusal (counted), answered as unknown. */
  withheld?: readonly Tool[];
  principal: Principal;
  context: ToolContext;
  /** The request's span's context: the parent of its tool call's span (absent: the active context's). */
  trace?: Context;
  /** The tool context, its asks part of `trace` (a tool call's span): used only while that span is recorded. */
  within?(trace: Context): ToolContext;
  log: Logger;
  version: string;
};

const published = new WeakMap<Tool, PublishedTool>();

/** One validator for every exchange: the SDK builds an Ajv instance per Server otherwise (~0.9 ms a request, bench `search`). */
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/** What `tools/list` publishes for a tool: also what the golden file locks. Built once per tool. */
export function publishedTool(tool: Tool): PublishedTool {
  let entry = published.get(tool);
  if (!entry) {
    entry = buildPublishedTool(tool);
    published.set(tool, entry);
  }
  return entry;
}

function buildPublishedTool(tool: Tool): PublishedTool {
  const { $schema: _ignored, ...inputSchema } = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema as PublishedTool['inputSchema'],
    annotations: tool.annotations,
  };
}

export async function handleMcpRequest(req: IncomingMessage, res: ServerResponse, body: unknown, exchange: McpExchange): Promise<void> {
  const server = new Server({ name: 'mailcairn', version: exchange.version }, { capabilities: { tools: {} }, jsonSchemaValidator });
  const byName = new Map(exchange.tools.map((tool) => [tool.name, tool]));
  const requestTrace = exchange.trace ?? context.active();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await listedNow(exchange)).map(publishedTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name);
    if (!tool) {
      const withheld = exchange.withheld?.find((t) => t.name === request.params.name);
      // The name is the caller's text unless it is one of this deployment's tools: only then is it named.
      return observeToolCall(withheld?.name, requestTrace, async (call) => {
        if (withheld) recordRefusal(exchange.log, { surface: 'mcp', target: withheld.name, permission: withheld.permission, principal: exchange.principal });
        exchange.log.info({ event: 'mcp.tool-call', tool: null, isError: true, code: -32602, durationMs: 0 }, 'mcp.tool-call');
        call.ended('refused', -32602);
        // Unknown and not granted read the same: nothing about the caller, credential or permission.
        throw Object.assign(new Error(`Unknown tool: '${request.params.name}'`), { code: -32602 });
      });
    }
    return observeToolCall(tool.name, requestTrace, (call) => callTool(tool, request.params.arguments ?? {}, exchange, call));
  });
  const transport = new JsonExchangeTransport(req, res);
  // Closed only when the client left before its answer (so a running handler is aborted): closing
  // an answered exchange costs an McpError with its stack per call and releases nothing the
  // collector would not. Closing the transport closes the server too (Protocol.connect chains onclose).
  res.on('close', () => {
    if (!res.writableFinished) void transport.close();
  });
  await server.connect(transport);
  // Params of the wrong shape are the caller's -32602, answered before the SDK parses them (request-params.ts).
  const dispatch = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const admitted = admitMessage(message);
    if (admitted.kind === 'dispatch') dispatch?.(admitted.message, extra);
    else void transport.send(admitted.answer);
  };
  await transport.handle(body);
}

/** The caller's tools that are offered right now (`ask_mail` only while the deployment can answer). */
async function listedNow(exchange: McpExchange): Promise<readonly Tool[]> {
  const offered = await Promise.all(exchange.tools.map((tool) => (tool.offered === undefined ? true : tool.offered(exchange.context).catch(() => false))));
  return exchange.tools.filter((_, i) => offered[i]);
}

async function callTool(tool: Tool, args: unknown, exchange: McpExchange, call: ObservedToolCall): Promise<CallToolResult> {
  const started = performance.now();
  let result: CallToolResult;
  let code: number | null = null;
  try {
    // The use case asks again, whatever the listing showed (defence in depth: 14001 naming the permission).
    if (!holds(exchange.principal, tool.permission)) {
      recordRefusal(exchange.log, { surface: 'mcp', target: tool.name, permission: tool.permission, principal: exchange.principal });
      throw new AppError('E_APP_REFUSED', { message: `The operation needs the permission ${tool.permission}`, details: { permission: tool.permission } });
    }
    // The tool's asks are children of the call's span, named: the active context does not follow its awaits.
    const toolContext = exchange.within !== undefined && call.traceId() !== undefined ? exchange.within(call.trace) : exchange.context;
    result = toolSuccess(await tool.call(args, toolContext));
  } catch (err) {
    // The call's span's trace id when traces are recorded; otherwise one minted for this failure alone.
    const failure = toolFailure(err, () => call.traceId() ?? randomBytes(16).toString('hex'));
    code = failure.code;
    result = failure.result;
    call.ended(failure.kind === 'refused' ? 'refused' : 'failed', failure.code);
    if (failure.kind === 'undiagnosed') exchange.log.error({ err, event: 'mcp.tool-failed', tool: tool.name, traceId: failure.traceId }, 'mcp.tool-failed');
  }
  const durationMs = Math.round((performance.now() - started) * 10) / 10;
  exchange.log.info({ event: 'mcp.tool-call', tool: tool.name, isError: code !== null, ...(code !== null ? { code } : {}), durationMs }, 'mcp.tool-call');
  return result;
}
