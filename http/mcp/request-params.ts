/**
 * The params of a request this server answers, checked before the SDK's
 * `Server` sees the request: params of the wrong shape (an array or a string
 * for `arguments`, a number for `name`, no `params` at all) are JSON-RPC
 * error -32602 Invalid params, naming the member and what it must be.
 *
 * Why here: the SDK's `Protocol.setRequestHandler` parses a request with its
 * method's schema before any handler runs and answers a failure as -32603
 * Internal error (issue 30), and answers a request asking for a task the
 * same way. A caller's malformed params are not our failure; -32603 is kept
 * for what is.
 *
 * The message comes from `describeIssues` (runtime/input-issues.ts): zod's
 * expectations, never the value received.
 *
 * Pure. Importable by modules of `http/mcp/` only.
 */
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  ListToolsRequestSchema,
  PingRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describeIssues } from '../../runtime/input-issues.ts';

/** The request methods the server answers, each with the schema its handler is registered with (mcp-server.ts; `initialize` and `ping` by the SDK). */
const REQUEST_SCHEMAS = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
} as const;

/**
 * What is dispatched of a message: a request whose params its method's
 * schema refuses is answered -32602 here; task augmentation (`params.task`)
 * is dropped, since this server declares no task support and the MCP
 * specification has such a receiver process the request normally (the SDK
 * would answer -32603 "does not support task creation"). Anything else
 * passes unchanged (an unknown method: the SDK's -32601).
 */
export function admitMessage(message: JSONRPCMessage): { kind: 'dispatch'; message: JSONRPCMessage } | { kind: 'refused'; answer: JSONRPCErrorResponse } {
  if (!isJSONRPCRequest(message)) return { kind: 'dispatch', message };
  const request = withoutTask(message);
  if (!Object.hasOwn(REQUEST_SCHEMAS, request.method)) return { kind: 'dispatch', message: request };
  const schema = REQUEST_SCHEMAS[request.method as keyof typeof REQUEST_SCHEMAS];
  const parsed = schema.safeParse(request);
  if (parsed.success) return { kind: 'dispatch', message: request };
  return {
    kind: 'refused',
    answer: {
      jsonrpc: '2.0',
      id: request.id,
      error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${describeIssues(parsed.error, 'params')}` },
    },
  };
}

function withoutTask(request: JSONRPCRequest): JSONRPCRequest {
  const params = request.params;
  if (params === undefined || !Object.hasOwn(params, 'task')) return request;
  const { task: _dropped, ...rest } = params;
  return { ...request, params: rest };
}
