/**
 * Malformed requests the held-out fuzz run and the fuzz families found
 * (issue 30), each answered as the caller's mistake, never as ours:
 * - a body nested deeper than 64 levels (5,000 overflowed the SDK's stack:
 *   an empty 500) is refused before any JSON-RPC handling: 400 with
 *   -32600 on /mcp, a 400 problem on the admin API; 64 levels pass;
 * - `tools/call` params of the wrong shape (an array, a string, a number
 *   for `arguments`; no `name`; no params) are -32602, not -32603 (params
 *   that are no object fail the envelope: 400, -32700); so are
 *   `tools/list` and `initialize` params of the wrong shape;
 * - a request asking for a task (`params.task`) is answered as if it had
 *   not (this server declares no tasks), not -32603;
 * - a batch repeating an id answers each of its requests;
 * - the depth scan itself: brackets inside strings and escaped quotes do
 *   not count, and a megabyte of `[` is refused without recursion.
 * Against a real service mirroring a tiny Dovecot mailbox.
 */
import t from 'tap';
import { MAX_JSON_DEPTH, nestsWithin } from '../../../http/pipeline/json-depth.ts';
import { jsonRpcAnswer, startMcpFuzzService } from '../../helpers/mcp-fuzz-service.ts';

t.setTimeout(110_000);

const nested = (depth: number, inner = '1'): string => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

t.test('the depth scan', async (t) => {
  const bytes = (text: string) => Buffer.from(text, 'utf8');
  t.equal(MAX_JSON_DEPTH, 64);
  t.ok(nestsWithin(bytes(nested(64))), '64 levels pass');
  t.notOk(nestsWithin(bytes(nested(65))), '65 are refused');
  t.ok(nestsWithin(bytes(`{"a":"${'['.repeat(500)}"}`)), 'brackets inside a string do not count');
  t.ok(nestsWithin(bytes(`{"a":"\\"${'['.repeat(500)}"}`)), 'nor after an escaped quote');
  t.notOk(nestsWithin(bytes(`{"a":"\\\\"${'['.repeat(500)}`)), 'an escaped backslash ends no string');
  t.notOk(nestsWithin(Buffer.alloc(1024 * 1024, '[')), 'a megabyte of [ is refused, without recursion');
  t.ok(nestsWithin(bytes('{"é":"🧾[[["}')), 'multi-byte text is skipped as it comes');
});

t.test('/mcp and the admin API answer malformed requests as the caller’s', async (t) => {
  const service = await startMcpFuzzService(t);
  const rpc = async (body: unknown) => {
    const { status, text } = await service.post(typeof body === 'string' ? body : JSON.stringify(body));
    return { status, text, json: text === '' ? null : (JSON.parse(text) as Record<string, any>) };
  };

  // Depth.
  for (const [name, body] of [
    ['a response whose result nests 5,000 levels', `{"jsonrpc":"2.0","id":1,"result":{"a":${nested(5_000)}}}`],
    ['a response whose error.data nests 5,000 levels', `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":${nested(5_000)}}}`],
    [
      'a request whose arguments nest 65 levels',
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_accounts","arguments":{"a":${nested(62)}}}}`,
    ],
  ] as const) {
    const answer = await rpc(body);
    t.equal(answer.status, 400, `${name}: 400`);
    t.same(
      answer.json,
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: the body nests deeper than 64 levels' } },
      `${name}: -32600`,
    );
  }
  const atLimit = await rpc(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_accounts","arguments":{"a":${nested(61)}}}}`);
  t.equal(atLimit.status, 200, '64 levels in all reach the tool');
  t.equal(atLimit.json?.result?.structuredContent?.code, 51001, 'which refuses the unknown member');

  // (Within the route's 4 KB: depth, not size, is what is refused.)
  const admin = await service.adminPost('/mailbox/rewind', `{"account":"rita","folder":${nested(1_500, '"inbox"')}}`);
  t.equal(admin.status, 400, 'admin: a deep body is 400');
  t.same(
    JSON.parse(admin.text),
    { status: 400, title: 'Invalid request', detail: 'Send a body nested at most 64 levels deep.' },
    'admin: a problem naming the limit',
  );

  // Params of the wrong shape.
  const call = (params: unknown) => rpc({ jsonrpc: '2.0', id: 7, method: 'tools/call', ...(params === undefined ? {} : { params }) });
  for (const [name, params, member] of [
    ['arguments an array', { name: 'list_accounts', arguments: [] }, 'params.arguments'],
    ['arguments a string', { name: 'search_emails', arguments: 'budget' }, 'params.arguments'],
    ['arguments a number', { name: 'search_emails', arguments: 5 }, 'params.arguments'],
    ['arguments null', { name: 'search_emails', arguments: null }, 'params.arguments'],
    ['no name', { arguments: {} }, 'params.name'],
    ['a number for a name', { name: 5, arguments: {} }, 'params.name'],
    ['no params', undefined, 'params'],
  ] as const) {
    const answer = await call(params);
    t.equal(answer.status, 200, `tools/call, ${name}: 200`);
    t.equal(answer.json?.id, 7, `tools/call, ${name}: answers its id`);
    t.equal(answer.json?.error?.code, -32602, `tools/call, ${name}: -32602`);
    t.match(answer.json?.error?.message, new RegExp(`^Invalid params: ${member.replace('.', '\\.')}`), `tools/call, ${name}: names ${member}`);
  }
  const list = await rpc({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { cursor: 5 } });
  t.equal(list.json?.error?.code, -32602, 'tools/list with a cursor of the wrong type: -32602');
  const init = await rpc({ jsonrpc: '2.0', id: 9, method: 'initialize', params: { protocolVersion: 1 } });
  t.equal(init.json?.error?.code, -32602, 'initialize with params of the wrong shape: -32602');

  // A task asked for: answered as a plain call.
  const task = await call({ name: 'list_accounts', arguments: {}, task: { ttl: 1000 } });
  t.ok(Array.isArray(task.json?.result?.structuredContent?.accounts), 'a call asking for a task is answered as a plain call');
  const ping = await rpc({ jsonrpc: '2.0', id: 10, method: 'ping', params: { task: {} } });
  t.same(ping.json, { jsonrpc: '2.0', id: 10, result: {} }, 'so is a ping');

  // A batch repeating an id.
  const batch = await rpc([
    { jsonrpc: '2.0', id: 3, method: 'ping' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_accounts', arguments: [] } },
    { jsonrpc: '2.0', id: 4, method: 'ping' },
  ]);
  t.equal(batch.status, 200);
  t.ok(jsonRpcAnswer(batch.text).wellFormed, 'well-formed');
  t.same(
    (batch.json as unknown as Array<{ id: number }>).map((a) => a.id),
    [3, 3, 4],
    'one answer per request, in order, also for the repeated id',
  );

  t.equal(service.sync.logs.events('http.failed').length, 0, 'no exchange failed');
});
