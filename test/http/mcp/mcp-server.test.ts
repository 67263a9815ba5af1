/**
 * One MCP exchange, through the SDK's own client over a real node:http
 * server: refusals in the shape of docs/mcp-tools.md "Errors", the single
 * 54001 for an undiagnosed failure (logged in full with the trace id the
 * caller gets), the one answer for unknown tools, and one log line per call.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t, { type Test } from 'tap';
import { z } from 'zod';
import { answerPreflight, applyCors, decideOrigin } from '../../../http/mcp/cors.ts';
import { handleMcpRequest } from '../../../http/mcp/mcp-server.ts';
import { defineTool, type Tool, type ToolContext } from '../../../http/mcp/tool.ts';
import { anonymousPrincipal, type Principal } from '../../../http/auth/principal.ts';
import { AppError } from '../../../runtime/errors.ts';
import { captureLog } from '../../helpers/log-capture.ts';

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const base = { category: 'mailbox' as const, permission: 'service.mail.read' as const, annotations: readOnly };

const tools: Tool[] = [
  defineTool({
    ...base,
    name: 'echo_count',
    title: 'Echo',
    description: 'Counts letters.',
    input: z.strictObject({ word: z.string().min(1).max(20) }),
    run: async (input) => ({ letters: input.word.length }),
  }),
  defineTool({
    ...base,
    name: 'always_breaks',
    title: 'Breaks',
    description: 'Fails without a diagnosis.',
    input: z.strictObject({}),
    run: async () => {
      throw new Error('disk on fire: secret-detail-42');
    },
  }),
  defineTool({
    ...base,
    name: 'refuses',
    title: 'Refuses',
    description: 'Refuses with a known code.',
    input: z.strictObject({}),
    run: async () => {
      throw new AppError('E_TOOL_RESULT_LIMIT');
    },
  }),
];

async function serve(t: Test, allowedOrigins: string[] = ['*'], principal: Principal = anonymousPrincipal('mcp')) {
  const logs = captureLog();
  const context = {} as ToolContext;
  const server: Server = createServer((req, res) => {
    const origin = decideOrigin(req, allowedOrigins);
    if (origin.kind === 'refused') {
      res.statusCode = 403;
      return res.end();
    }
    if (req.method === 'OPTIONS') return answerPreflight(res, origin);
    applyCors(res, origin);
    if (req.method !== 'POST') {
      res.statusCode = 405;
      return res.end();
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handleMcpRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')), { tools, principal, context, log: logs.log, version: 'test' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const client = new Client({ name: 'mcp-server-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  return { client, logs, url };
}

t.test('success, refusal, invalid input, undiagnosed failure, unknown tool', async (t) => {
  const { client, logs } = await serve(t);
  const listed = await client.listTools();
  t.same(
    listed.tools.map((tool) => tool.name),
    ['echo_count', 'always_breaks', 'refuses'],
  );
  t.same(listed.tools[0]!.inputSchema, {
    type: 'object',
    properties: { word: { type: 'string', minLength: 1, maxLength: 20 } },
    required: ['word'],
    additionalProperties: false,
  });

  const fine = (await client.callTool({ name: 'echo_count', arguments: { word: 'mail' } })) as CallToolResult;
  t.same(fine.structuredContent, { letters: 4 });
  t.same(JSON.parse((fine.content[0] as { text: string }).text), { letters: 4 }, 'the text is the same compact JSON');

  const invalid = (await client.callTool({ name: 'echo_count', arguments: { word: '', extra: 1 } })) as CallToolResult;
  t.equal(invalid.isError, true);
  t.match((invalid.content[0] as { text: string }).text, /^Mailcairn error 51001: The tool input is invalid: .*word.*extra/);
  t.match(invalid.structuredContent, { code: 51001 });

  const refused = (await client.callTool({ name: 'refuses', arguments: {} })) as CallToolResult;
  t.match(refused.structuredContent, { code: 51003, message: 'At most 50 ranked results may be requested' });

  const broken = (await client.callTool({ name: 'always_breaks', arguments: {} })) as CallToolResult;
  t.equal(broken.isError, true);
  const { code, traceId, message } = broken.structuredContent as { code: number; traceId: string; message: string };
  t.equal(code, 54001);
  t.notMatch(message, /disk on fire|secret-detail/, 'the reason stays in the log');
  const failure = logs.events('mcp.tool-failed');
  t.equal(failure.length, 1);
  t.match(
    failure[0],
    { level: 50, tool: 'always_breaks', traceId, err: { type: 'Error', stack: /^at / } },
    'logged at error with the trace id, by class and frames',
  );
  t.notMatch(JSON.stringify(failure[0]), /disk on fire|secret-detail/, 'not by its message, which may quote input (runtime/log.ts)');

  await t.rejects(client.callTool({ name: 'not_a_tool', arguments: {} }), { code: -32602, message: /Unknown tool: 'not_a_tool'/ });

  const calls = logs.events('mcp.tool-call');
  t.same(
    calls.map((l) => [l.tool, l.isError, l.code ?? null]),
    [
      ['echo_count', false, null],
      ['echo_count', true, 51001],
      ['refuses', true, 51003],
      ['always_breaks', true, 54001],
      [null, true, -32602],
    ],
    'one line per call: the tool, error or not, the code',
  );
  t.ok(calls.every((l) => typeof l.durationMs === 'number'));
  t.notMatch(logs.raw(), /"word"|mail"|not_a_tool/, 'no input and no caller-written name in the log');
});

t.test('CORS: a listed origin is served and named; another is refused; preflight answers', async (t) => {
  const { url } = await serve(t, ['https://agent.example']);
  const preflight = await fetch(url, { method: 'OPTIONS', headers: { origin: 'https://agent.example', 'access-control-request-method': 'POST' } });
  t.equal(preflight.status, 204);
  t.equal(preflight.headers.get('access-control-allow-origin'), 'https://agent.example');
  t.match(preflight.headers.get('access-control-allow-headers'), /Mcp-Protocol-Version/);
  const refused = await fetch(url, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' });
  t.equal(refused.status, 403);
});

t.test('the use case asks again: a tool reached without its permission is 14001 naming it, counted and logged', async (t) => {
  const principal: Principal = { kind: 'caller', identity: 'reporting-key', permissions: new Set(['service.mail.ask']) };
  const { client, logs } = await serve(t, ['*'], principal);
  const refused = (await client.callTool({ name: 'echo_count', arguments: { word: 'x' } })) as CallToolResult;
  t.match(refused, { isError: true, structuredContent: { code: 14001, permission: 'service.mail.read' } });
  t.match(logs.events('auth.refused'), [{ level: 40, surface: 'mcp', target: 'echo_count', permission: 'service.mail.read', credential: 'reporting-key' }]);
});
