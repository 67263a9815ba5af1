/**
 * The chat stand-in itself, spoken to with plain fetch: a `respond` script
 * reads the tool results its request carried and answers from them; call ids
 * are numbered across requests; a conversation a real server would refuse
 * (a tool result answering no call) is refused with 400 and consumes no
 * script; the default answers once the script is used up.
 */
import t from 'tap';
import { DEFAULT_STANDIN_TEXT, startChatStandin, toolResultsOf } from '../harness/chat-standin.ts';

t.test('respond reads the tool results; shapes a server refuses are refused', async (t) => {
  const standin = await startChatStandin();
  t.teardown(() => standin.close());
  const post = async (body: unknown) => {
    const res = await fetch(`${standin.baseAddress}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as { choices?: Array<{ message: Record<string, unknown>; finish_reason: string }> } };
  };
  const user = { role: 'user', content: 'q' };

  standin.script(
    { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { query: 'x' } }] },
    {
      kind: 'respond',
      respond: (req) => ({
        kind: 'text',
        text: toolResultsOf(req)
          .map((r) => `${r.name}:${r.content}`)
          .join('|'),
      }),
    },
  );
  const first = await post({ model: 'm', messages: [user] });
  t.equal(first.status, 200);
  const call = (first.json.choices![0]!.message.tool_calls as Array<{ id: string }>)[0]!;
  t.equal(call.id, 'call_1');
  t.equal(first.json.choices![0]!.finish_reason, 'tool_calls');

  const orphan = await post({ model: 'm', messages: [user, { role: 'tool', tool_call_id: 'call_9', content: 'r' }] });
  t.equal(orphan.status, 400, 'a tool result answering no call is refused');
  t.equal(standin.requests.at(-1)!.answered, 'rejected');

  const assistant = { role: 'assistant', content: null, tool_calls: first.json.choices![0]!.message.tool_calls };
  const second = await post({ model: 'm', messages: [user, assistant, { role: 'tool', tool_call_id: call.id, content: 'found 2' }] });
  t.equal(second.status, 200, 'the refused request consumed no script');
  t.same(second.json.choices![0]!.message, { role: 'assistant', content: 'search_mail:found 2' });
  t.equal(standin.requests.at(-1)!.answered, 'text', 'recorded as what respond returned');
  t.same(toolResultsOf(standin.requests.at(-1)!), [{ toolCallId: 'call_1', name: 'search_mail', content: 'found 2' }]);

  const third = await post({ model: 'm', messages: [user] });
  t.equal(third.json.choices![0]!.message.content, DEFAULT_STANDIN_TEXT, 'then the default');
});
