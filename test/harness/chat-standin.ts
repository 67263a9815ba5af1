/**
 * A stand-in OpenAI-compatible chat server for tests of `ask_mail` (the only
 * chat stand-in the tests allow): node:http on 127.0.0.1, an ephemeral port,
 * answering `POST /v1/chat/completions` (and `/<prefix>/v1/chat/completions`)
 * in the real wire format. Modelled on `embedding-standin.ts`.
 *
 * It plays a model by script, deterministically. Each request is recorded
 * whole (the parsed body with model, messages, tools and tool_choice, the
 * Authorization header seen, how it was answered). Answers are queued with
 * `script`, one per request, then the default (`setDefault`) answers:
 * - `tool-calls`: the model calls functions; ids are `call_<n>`, numbered
 *   across the stand-in's life; object arguments are sent as a JSON string,
 *   string arguments as given (so a test can send arguments that do not parse);
 * - `text`: the model answers;
 * - `respond`: a function of the recorded request returns the answer, for
 *   scripts that read the tool results they were sent (`toolResultsOf`);
 * - faults: a status (429 with `Retry-After`, 500, 401…, with a chosen body),
 *   a hang (no answer until the stand-in closes), JSON that does not parse,
 *   an empty text with no tool calls, a connection reset.
 *
 * Like a real server, it refuses (400, `answered: 'rejected'`, no script
 * consumed) a conversation whose shape is wrong: a tool message answering no
 * earlier call, a call without `type: 'function'` or whose arguments are not
 * a string. So a client test that passes here sends what OpenAI documents.
 *
 * `close()` destroys every socket, hung ones included, so no test waits on it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerFault, send, sendError, type StandinFault, startJsonServer } from './openai-standin.ts';

export type StandinToolCall = { name: string; arguments: Record<string, unknown> | string };

export type StandinAnswer =
  | { kind: 'tool-calls'; calls: StandinToolCall[]; text?: string }
  | { kind: 'text'; text: string }
  | { kind: 'respond'; respond: (request: RecordedChatRequest) => StandinAnswer }
  | { kind: 'empty-text' }
  | StandinFault;

export type RecordedChatRequest = {
  method: string;
  path: string;
  /** The parsed body, whole. */
  body: Record<string, unknown>;
  model: unknown;
  messages: unknown[];
  tools: unknown;
  toolChoice: unknown;
  authorization: string | undefined;
  /** How it was answered; for `respond`, the kind the function returned. `rejected`: the stand-in refused its shape. */
  answered: Exclude<StandinAnswer['kind'], 'respond'> | 'rejected';
  /** Ids of the tool calls this answer made. */
  toolCallIds: string[];
};

export type ChatStandin = {
  /** `http://127.0.0.1:<port>`, without `/v1`. */
  readonly baseAddress: string;
  readonly requests: RecordedChatRequest[];
  /** Queue answers for the next requests, in order. */
  script(...answers: StandinAnswer[]): void;
  /** Answer every request with this once the script is used up (default: a short text). */
  setDefault(answer: StandinAnswer): void;
  close(): Promise<void>;
};

export const DEFAULT_STANDIN_TEXT = 'The stand-in has no script for this question.';

/** The tool results a request carried, in order, each with the name of the call it answers (null if none matches). */
export function toolResultsOf(request: RecordedChatRequest): { toolCallId: string; name: string | null; content: string }[] {
  const names = new Map<string, string>();
  const results: { toolCallId: string; name: string | null; content: string }[] = [];
  for (const m of request.messages as Array<Record<string, unknown>>) {
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls as Array<{ id?: unknown; function?: { name?: unknown } }>) {
        if (typeof c.id === 'string' && typeof c.function?.name === 'string') names.set(c.id, c.function.name);
      }
    }
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') {
      results.push({ toolCallId: m.tool_call_id, name: names.get(m.tool_call_id) ?? null, content: String(m.content ?? '') });
    }
  }
  return results;
}

export async function startChatStandin(): Promise<ChatStandin> {
  const requests: RecordedChatRequest[] = [];
  const queue: StandinAnswer[] = [];
  let fallback: StandinAnswer = { kind: 'text', text: DEFAULT_STANDIN_TEXT };
  let callCounter = 0;
  let completionCounter = 0;

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = new URL(req.url ?? '/', 'http://standin').pathname;
    if (req.method !== 'POST' || !/(^|\/)v1\/chat\/completions$/.test(path)) {
      sendError(res, 404, 'not found');
      return;
    }
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      sendError(res, 400, 'body is not a JSON object');
      return;
    }
    const recorded: RecordedChatRequest = {
      method: req.method,
      path,
      body,
      model: body.model,
      messages: Array.isArray(body.messages) ? body.messages : [],
      tools: body.tools,
      toolChoice: body.tool_choice,
      authorization: req.headers.authorization,
      answered: 'rejected',
      toolCallIds: [],
    };
    requests.push(recorded);
    const wrong = shapeProblem(body);
    if (wrong !== null) {
      sendError(res, 400, wrong);
      return;
    }

    let answer = queue.shift() ?? fallback;
    for (let depth = 0; answer.kind === 'respond'; depth++) {
      if (depth > 8) throw new Error('respond scripts nest too deeply');
      answer = answer.respond(recorded);
    }
    recorded.answered = answer.kind;

    switch (answer.kind) {
      case 'hang':
      case 'reset':
      case 'malformed-json':
      case 'status':
        answerFault(req, res, answer, '{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The');
        return;
      case 'empty-text':
        send(res, 200, completion(body.model, { role: 'assistant', content: '' }, 'stop'));
        return;
      case 'text':
        send(res, 200, completion(body.model, { role: 'assistant', content: answer.text }, 'stop'));
        return;
      case 'tool-calls': {
        const toolCalls = answer.calls.map((c) => ({
          id: `call_${++callCounter}`,
          type: 'function',
          function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
        }));
        recorded.toolCallIds = toolCalls.map((c) => c.id);
        send(res, 200, completion(body.model, { role: 'assistant', content: answer.text ?? null, tool_calls: toolCalls }, 'tool_calls'));
        return;
      }
    }
  }

  function completion(model: unknown, message: Record<string, unknown>, finishReason: 'stop' | 'tool_calls'): unknown {
    const n = ++completionCounter;
    return {
      id: `chatcmpl-standin-${n}`,
      object: 'chat.completion',
      created: 1_700_000_000 + n,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage: { prompt_tokens: 10 * n, completion_tokens: 5, total_tokens: 10 * n + 5 },
    };
  }

  const server = await startJsonServer(handle);

  return {
    baseAddress: server.baseAddress,
    requests,
    script: (...answers) => {
      queue.push(...answers);
    },
    setDefault: (answer) => {
      fallback = answer;
    },
    close: () => server.close(),
  };
}

/** What a real server would refuse in the conversation's shape, or null. */
function shapeProblem(body: Record<string, unknown>): string | null {
  if (typeof body.model !== 'string' || body.model === '') return 'model is required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages must be a non-empty array';
  const calls = new Set<string>();
  for (const [i, m] of (body.messages as unknown[]).entries()) {
    if (typeof m !== 'object' || m === null) return `messages[${i}] is not an object`;
    const msg = m as Record<string, unknown>;
    switch (msg.role) {
      case 'system':
      case 'user':
        if (typeof msg.content !== 'string') return `messages[${i}].content must be a string`;
        break;
      case 'assistant': {
        const toolCalls = msg.tool_calls;
        if (toolCalls !== undefined) {
          if (!Array.isArray(toolCalls) || toolCalls.length === 0) return `messages[${i}].tool_calls must be a non-empty array`;
          for (const c of toolCalls as Array<Record<string, unknown>>) {
            const fn = c.function as Record<string, unknown> | undefined;
            if (typeof c.id !== 'string' || c.type !== 'function' || typeof fn?.name !== 'string' || typeof fn.arguments !== 'string') {
              return `messages[${i}].tool_calls has a call that is not {id, type: 'function', function: {name, arguments: string}}`;
            }
            calls.add(c.id);
          }
        } else if (typeof msg.content !== 'string') return `messages[${i}].content is required without tool_calls`;
        break;
      }
      case 'tool':
        if (typeof msg.tool_call_id !== 'string' || !calls.has(msg.tool_call_id)) {
          return `messages[${i}] with role 'tool' must be a response to a preceding message with 'tool_calls'`;
        }
        if (typeof msg.content !== 'string') return `messages[${i}].content must be a string`;
        break;
      default:
        return `messages[${i}].role is not one of system, user, assistant, tool`;
    }
  }
  return null;
}
