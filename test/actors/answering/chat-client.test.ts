/**
 * The chat client over real HTTP against the chat stand-in: the conversation
 * sent exactly in the OpenAI wire format (tools, tool_choice, an assistant
 * turn with tool_calls, tool results by tool_call_id) and the calls parsed
 * back; the Authorization header only with a key; the address rule; each
 * fault to its code (401/403 → 71001; a 5xx, 429, reset retried within the
 * deadline, then 72001; a hang ended by the deadline; the caller's abort told
 * apart; not JSON and empty text → 73001); and no error carrying the
 * provider's body, the question or the key. Timed tests use small deadlines
 * and bound what they measure.
 */
import t, { type Test } from 'tap';
import {
  type ChatClient,
  type ChatClientOptions,
  type ChatMessage,
  type ChatTool,
  chatCompletionsUrl,
  createChatClient,
} from '../../../actors/answering/chat-client.ts';
import { seededRandom } from '../../../runtime/clock.ts';
import { AppError } from '../../../runtime/errors.ts';
import { type ChatStandin, startChatStandin, toolResultsOf } from '../../harness/chat-standin.ts';

t.setTimeout(60_000);

const KEY = 'sk-chat-test-7f3a91';
const QUESTION = 'When does the Zanzibar lease renewal fall due?';
const PROVIDER_BODY = 'provider-said-PRIVATE-body-words';
const SEARCH: ChatTool = {
  name: 'search_mail',
  description: 'Search the mail',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
};

/** Every failure seen, for the privacy check at the end. */
const failures: AppError[] = [];

async function setup(t: Test, options: Partial<ChatClientOptions> = {}): Promise<{ standin: ChatStandin; client: ChatClient }> {
  const standin = await startChatStandin();
  const client = createChatClient({
    baseAddress: standin.baseAddress,
    model: 'stand-in-chat',
    apiKeyRef: 'env:CHAT_TEST_KEY',
    env: { CHAT_TEST_KEY: KEY },
    deadlineMs: 5_000,
    retry: { baseMs: 20, maxMs: 100 },
    random: seededRandom(3),
    ...options,
  });
  t.teardown(async () => {
    await client.close();
    await standin.close();
  });
  return { standin, client };
}

const ask = (question = QUESTION): ChatMessage[] => [
  { role: 'system', content: 'Answer from the mail only.' },
  { role: 'user', content: question },
];
const never = (): AbortSignal => new AbortController().signal;

/** The rejection of `p`, which must be an AppError; recorded for the privacy check. */
async function failure(t: Test, p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    t.ok(err instanceof AppError, 'fails with an AppError');
    failures.push(err as AppError);
    return err as AppError;
  }
  t.fail('expected a failure');
  throw new Error('resolved');
}

t.test('the address rule: /v1/chat/completions under the base, once', async (t) => {
  t.equal(chatCompletionsUrl('http://127.0.0.1:11434').href, 'http://127.0.0.1:11434/v1/chat/completions');
  t.equal(chatCompletionsUrl('http://127.0.0.1:8080/v1/').href, 'http://127.0.0.1:8080/v1/chat/completions');
  t.equal(chatCompletionsUrl('https://gw.example/openai').href, 'https://gw.example/openai/v1/chat/completions');
  t.equal(chatCompletionsUrl('https://gw.example/x?api-version=2').href, 'https://gw.example/x/v1/chat/completions?api-version=2');
  const { standin } = await setup(t);
  for (const base of [`${standin.baseAddress}/v1`, `${standin.baseAddress}/gateway/`]) {
    const client = createChatClient({ baseAddress: base, model: 'm', apiKeyRef: null, deadlineMs: 2_000 });
    t.teardown(() => client.close());
    t.equal((await client.complete({ messages: ask() }, never())).text?.length !== 0, true);
  }
  t.same(
    standin.requests.map((r) => r.path),
    ['/v1/chat/completions', '/gateway/v1/chat/completions'],
  );
});

t.test('a conversation round trip in the OpenAI wire format', async (t) => {
  const { standin, client } = await setup(t);
  standin.script(
    { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { query: 'lease renewal' } }] },
    {
      kind: 'respond',
      respond: (req) => {
        const [result] = toolResultsOf(req);
        return { kind: 'text', text: `Due on ${JSON.parse(result!.content).date} (${result!.name}).` };
      },
    },
  );

  const first = await client.complete({ messages: ask(), tools: [SEARCH], toolChoice: 'auto' }, never());
  t.same(first, { text: null, toolCalls: [{ id: 'call_1', name: 'search_mail', arguments: '{"query":"lease renewal"}' }], finishReason: 'tool_calls' });

  const messages: ChatMessage[] = [
    ...ask(),
    { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
    { role: 'tool', toolCallId: 'call_1', content: '{"date":"2025-06-30"}' },
  ];
  const second = await client.complete({ messages, tools: [SEARCH], toolChoice: 'auto' }, never());
  t.same(second, { text: 'Due on 2025-06-30 (search_mail).', toolCalls: [], finishReason: 'stop' });

  t.same(
    standin.requests.map((r) => r.answered),
    ['tool-calls', 'text'],
    'the stand-in took both requests (a wrong shape is refused with 400)',
  );
  const sent = standin.requests[1]!;
  t.same(sent.body, {
    model: 'stand-in-chat',
    messages: [
      { role: 'system', content: 'Answer from the mail only.' },
      { role: 'user', content: QUESTION },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search_mail', arguments: '{"query":"lease renewal"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"date":"2025-06-30"}' },
    ],
    tools: [{ type: 'function', function: { name: 'search_mail', description: 'Search the mail', parameters: SEARCH.parameters } }],
    tool_choice: 'auto',
    stream: false,
  });
  t.equal(sent.authorization, `Bearer ${KEY}`, 'the key from the env: reference, as a bearer token');
  t.notOk(JSON.stringify(sent.body).includes(KEY), 'the key is in no field of the body');
});

t.test('several calls, text beside them, arguments that do not parse, tool_choice none', async (t) => {
  const { standin, client } = await setup(t, { apiKeyRef: null });
  standin.script({
    kind: 'tool-calls',
    text: 'Let me look.',
    calls: [
      { name: 'search_mail', arguments: { query: 'a' } },
      { name: 'search_mail', arguments: '{"query": "b"' },
    ],
  });
  const reply = await client.complete({ messages: ask(), tools: [SEARCH], toolChoice: 'none' }, never());
  t.same(reply, {
    text: 'Let me look.',
    toolCalls: [
      { id: 'call_1', name: 'search_mail', arguments: '{"query":"a"}' },
      { id: 'call_2', name: 'search_mail', arguments: '{"query": "b"' },
    ],
    finishReason: 'tool_calls',
  });
  t.equal(standin.requests[0]!.authorization, undefined, 'no Authorization header without a key');
  t.equal(standin.requests[0]!.toolChoice, 'none');

  const plain = await client.complete({ messages: ask() }, never());
  t.equal(plain.text, 'The stand-in has no script for this question.');
  t.notOk('tools' in standin.requests[1]!.body, 'no tools field when none are offered');
  t.notOk('tool_choice' in standin.requests[1]!.body);
});

t.test('a key reference that cannot be read sends nothing', async (t) => {
  const { standin, client } = await setup(t, { apiKeyRef: 'env:CHAT_TEST_UNSET', env: {} });
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(err.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(err.message, /Answering:Endpoints:ApiKey/);
  t.equal(standin.requests.length, 0);
});

t.test('401 and 403 are a refused credential (71001), never retried', async (t) => {
  for (const status of [401, 403]) {
    const { standin, client } = await setup(t);
    standin.script({ kind: 'status', status, body: PROVIDER_BODY });
    const err = await failure(t, client.complete({ messages: ask() }, never()));
    t.equal(err.code, 'E_LLM_CREDENTIAL_REFUSED');
    t.equal(err.publicCode, 71001);
    t.match(err.details, { status, attempts: 1 });
    t.equal(standin.requests.length, 1, `${status}: one request`);
  }
});

t.test('a 500 then an answer: retried, and the answer returned', async (t) => {
  const { standin, client } = await setup(t);
  standin.script({ kind: 'status', status: 500, body: PROVIDER_BODY }, { kind: 'text', text: 'Recovered.' });
  const reply = await client.complete({ messages: ask() }, never());
  t.equal(reply.text, 'Recovered.');
  t.same(
    standin.requests.map((r) => r.answered),
    ['status', 'text'],
  );
});

t.test('a 500 that persists is 72001 after the attempts', async (t) => {
  const { standin, client } = await setup(t, { retry: { maxAttempts: 3, baseMs: 10, maxMs: 20 } });
  standin.setDefault({ kind: 'status', status: 503, body: PROVIDER_BODY });
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.equal(err.publicCode, 72001);
  t.match(err.details, { failure: 'http-503', status: 503, attempts: 3 });
  t.equal(standin.requests.length, 3);
});

t.test('another 4xx is 72001 at once', async (t) => {
  const { standin, client } = await setup(t);
  standin.setDefault({ kind: 'status', status: 404, body: PROVIDER_BODY });
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { status: 404, attempts: 1 });
  t.equal(standin.requests.length, 1);
});

t.test('429 with Retry-After: waited as asked when the deadline allows, refused at once when it does not', async (t) => {
  // Bounds wide enough for a loaded machine: what is told apart is one second waited from none, or from thirty.
  const { standin, client } = await setup(t, { deadlineMs: 10_000 });
  standin.script({ kind: 'status', status: 429, retryAfter: '1', body: PROVIDER_BODY }, { kind: 'text', text: 'After the pause.' });
  const began = performance.now();
  const reply = await client.complete({ messages: ask() }, never());
  const took = performance.now() - began;
  t.equal(reply.text, 'After the pause.');
  t.ok(took >= 950 && took < 6_000, `waited about the second asked (${Math.round(took)} ms)`);

  standin.script({ kind: 'status', status: 429, retryAfter: '30', body: PROVIDER_BODY });
  const began2 = performance.now();
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  const took2 = performance.now() - began2;
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { failure: 'http-429', status: 429, retryAfterMs: 30_000, attempts: 1 });
  t.ok(took2 < 6_000, `a wait past the deadline is not begun (${Math.round(took2)} ms)`);
  t.equal(standin.requests.length, 3);
});

t.test('a hang past the deadline is 72001 at about the deadline', async (t) => {
  const { standin, client } = await setup(t, { deadlineMs: 300 });
  standin.setDefault({ kind: 'hang' });
  const began = performance.now();
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  const took = performance.now() - began;
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { failure: 'timeout', attempts: 1 });
  t.notOk(err.details?.cause, 'not the caller’s deadline');
  t.ok(took >= 280 && took < 5_000, `ended at about 300 ms (${Math.round(took)} ms)`);
  t.equal(standin.requests.length, 1, 'the deadline bounds the whole call: no retry after it');
});

t.test("the caller's abort ends the call at once, told apart from the endpoint's deadline", async (t) => {
  const { standin, client } = await setup(t, { deadlineMs: 10_000 });
  standin.setDefault({ kind: 'hang' });
  const caller = new AbortController();
  setTimeout(() => caller.abort(), 100);
  const began = performance.now();
  const err = await failure(t, client.complete({ messages: ask() }, caller.signal));
  const took = performance.now() - began;
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { cause: 'caller-deadline' });
  t.ok(took < 5_000, `ended with the caller (${Math.round(took)} ms)`);

  // Aborted during a backoff wait, too.
  const slow = await setup(t, { retry: { baseMs: 5_000, maxMs: 5_000 }, deadlineMs: 20_000 });
  slow.standin.setDefault({ kind: 'status', status: 500 });
  const caller2 = new AbortController();
  setTimeout(() => caller2.abort(), 150);
  const began2 = performance.now();
  const err2 = await failure(t, slow.client.complete({ messages: ask() }, caller2.signal));
  t.match(err2.details, { cause: 'caller-deadline', attempts: 1 });
  t.ok(performance.now() - began2 < 4_000, 'the wait ended with the caller');

  const already = AbortSignal.abort();
  const err3 = await failure(t, client.complete({ messages: ask() }, already));
  t.match(err3.details, { cause: 'caller-deadline', attempts: 0 });
  t.equal(standin.requests.length, 1, 'an aborted caller sends nothing');
});

t.test('an answer that is not JSON, or holds no text and no call, is 73001, not retried', async (t) => {
  const { standin, client } = await setup(t);
  standin.script({ kind: 'malformed-json' }, { kind: 'empty-text' });
  const notJson = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(notJson.code, 'E_LLM_NO_TEXT');
  t.equal(notJson.publicCode, 73001);
  t.match(notJson.details, { reason: 'not-json', attempts: 1 });
  const empty = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(empty.code, 'E_LLM_NO_TEXT');
  t.match(empty.details, { reason: 'empty', attempts: 1 });
  standin.script({ kind: 'text', text: '  \n ' }, { kind: 'status', status: 200, body: '{"object":"chat.completion","choices":[]}' });
  t.match((await failure(t, client.complete({ messages: ask() }, never()))).details, { reason: 'empty' }, 'white space is no text');
  t.match((await failure(t, client.complete({ messages: ask() }, never()))).details, { reason: 'no-choices' });
  t.equal(standin.requests.length, 4);
});

t.test('a reset connection is retried, and 72001 when it persists', async (t) => {
  const { standin, client } = await setup(t);
  standin.script({ kind: 'reset' }, { kind: 'text', text: 'Second time lucky.' });
  t.equal((await client.complete({ messages: ask() }, never())).text, 'Second time lucky.');

  standin.setDefault({ kind: 'reset' });
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { failure: 'reset', attempts: 3 });
  t.equal(standin.requests.length, 5);
});

t.test('nothing listening is 72001', async (t) => {
  const { standin } = await setup(t);
  const address = standin.baseAddress;
  await standin.close();
  const client = createChatClient({ baseAddress: address, model: 'm', apiKeyRef: null, deadlineMs: 2_000, retry: { maxAttempts: 2, baseMs: 10 } });
  t.teardown(() => client.close());
  const err = await failure(t, client.complete({ messages: ask() }, never()));
  t.equal(err.code, 'E_LLM_NO_ANSWER');
  t.match(err.details, { failure: 'refused-connection', attempts: 2 });
});

t.test('no error carries the provider body, the question or the key', async (t) => {
  t.ok(failures.length >= 15, `checked ${failures.length} failures`);
  for (const err of failures) {
    const seen = `${err.message} ${JSON.stringify(err.details ?? {})} ${String(err.stack)}`;
    for (const secret of [PROVIDER_BODY, QUESTION, 'Zanzibar', KEY]) t.notOk(seen.includes(secret), `${err.code}: no ${secret.slice(0, 8)}…`);
  }
});
