/**
 * The rules of one `ask_mail` run (actors/answering/run.ts) with the real
 * chat client against the scripted chat stand-in. The lookup here hands back
 * fixed messages in place of the query pool (test/http/mcp/ask-mail.test.ts
 * runs the whole path): what is checked is what the run sends, counts, cuts
 * and cites.
 */
import t, { type Test } from 'tap';
import { createChatClient } from '../../../actors/answering/chat-client.ts';
import { MAX_ANSWER_CHARACTERS, MAX_CITATIONS } from '../../../actors/answering/protocol.ts';
import { type FoundMessage, type LookupArgs, type LookupResult, runQuestion } from '../../../actors/answering/run.ts';
import { injectionSet } from '../../fixtures/prompt-injection.ts';
import { type RecordedChatRequest, startChatStandin, toolResultsOf } from '../../harness/chat-standin.ts';

type Json = Record<string, any>;

function found(id: number, text = `Body of message ${id}`): FoundMessage {
  return { messageId: id, storedEmailId: `e${id}`, accountId: 'alice', folderAlias: 'inbox', subject: `Subject ${id}`, text };
}

async function setup(t: Test) {
  const chat = await startChatStandin();
  t.teardown(() => chat.close());
  const client = createChatClient({ baseAddress: chat.baseAddress, model: 'scripted', apiKeyRef: null, deadlineMs: 2_000 });
  t.teardown(() => client.close());
  const asked: LookupArgs[] = [];
  const run = (question: string, lookup: (args: LookupArgs) => LookupResult, bounds: { maxCalls?: number; maxInputCharacters?: number } = {}) =>
    runQuestion(question, {
      chat: client,
      lookup: async (args) => {
        asked.push(args);
        return lookup(args);
      },
      maxCalls: bounds.maxCalls ?? 6,
      maxInputCharacters: bounds.maxInputCharacters ?? 100_000,
      signal: new AbortController().signal,
      now: Date.now,
    });
  return { chat, run, asked };
}

const search = (args: Json) => ({ kind: 'tool-calls' as const, calls: [{ name: 'search_mail', arguments: args }] });
const results = (r: RecordedChatRequest | undefined) => (r === undefined ? [] : toolResultsOf(r).map((x) => x.content));

t.test('the characters bound: the call that leaves no room for another asks for the answer', async (t) => {
  const { chat, run } = await setup(t);
  // A model that answers when told to, and otherwise looks up again.
  const obliging = {
    kind: 'respond' as const,
    respond: (r: RecordedChatRequest) => (r.toolChoice === 'none' ? { kind: 'text' as const, text: 'From what I read [E1].' } : search({ queryText: 'more' })),
  };
  chat.setDefault(obliging);
  let n = 0;
  const long = () => {
    n += 1;
    return { found: [found(n, 'x'.repeat(3_000))], lexicalOnly: false, cut: false };
  };
  const answered = await run('Which long message?', long, { maxInputCharacters: 20_000 });
  t.equal(answered.ending, 'answered', 'the run answers within the bound instead of failing at it');
  t.ok(answered.charactersSent <= 20_000, 'what was sent stays within the bound');
  t.ok(answered.calls < 6, 'before the call bound');
  t.equal(chat.requests.at(-1)!.toolChoice, 'none', 'the last request asked for the answer');
  t.ok(
    chat.requests.slice(0, -1).every((r) => r.toolChoice === 'auto'),
    'every earlier one left room for another',
  );

  // A model that looks up even when asked to answer: the bound ends the run, and no request past it is sent.
  const before = chat.requests.length;
  chat.setDefault(search({ queryText: 'long' }));
  const stopped = await run('Which long message?', long, { maxInputCharacters: 20_000 });
  t.equal(stopped.ending, 'characters-bound-reached');
  t.ok(stopped.charactersSent <= 20_000);
  t.equal(chat.requests.length - before, stopped.calls);
  t.equal(stopped.reached.length, stopped.calls - 1, 'the lookups before the last call are still known (for the audit); the last one asked for is not run');
});

t.test('arguments the run cannot use are refused to the model, never run', async (t) => {
  const { chat, run, asked } = await setup(t);
  chat.script(
    { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: '{not json' }] },
    search({ queryText: 'x', accounts: ['bob'] }),
    search({ receivedBefore: 'yesterday' }),
    { kind: 'tool-calls', calls: [{ name: 'send_email', arguments: { to: ['a@b.example'] } }] },
    { kind: 'text', text: 'I could not search.' },
  );
  const outcome = await run('Anything?', () => ({ found: [found(1)], lexicalOnly: false, cut: false }));
  t.equal(outcome.ending, 'answered');
  t.equal(asked.length, 0, 'no lookup ran');
  const notices = chat.requests.slice(1).map((r) => results(r).at(-1));
  t.match(notices[0], /not a JSON object/);
  t.match(notices[1], /unknown member\(s\) accounts/);
  t.match(notices[2], /queryText: .*receivedBefore: /);
  t.match(notices[3], /There is no function by that name; use search_mail/);
  for (const n of notices) t.notMatch(n ?? '', /bob|yesterday|a@b\.example/, 'a refusal never repeats a value');
});

t.test('citations: every message read in first-reach order, cited where the answer says so; cuts are flagged', async (t) => {
  const { chat, run } = await setup(t);
  const many = Array.from({ length: MAX_CITATIONS + 5 }, (_, i) => found(100 + i));
  chat.script(search({ queryText: 'first' }), search({ queryText: 'second' }), {
    kind: 'text',
    text: `Both [E2, E3] and [E1]; not E4. ${'y'.repeat(MAX_ANSWER_CHARACTERS)}`,
  });
  let call = 0;
  const outcome = await run('Everything?', () => {
    call += 1;
    return call === 1
      ? { found: [found(1), found(2), found(3)], lexicalOnly: true, cut: true }
      : { found: [found(2), ...many], lexicalOnly: false, cut: false };
  });
  const result = outcome.result!;
  t.equal(result.citations.length, MAX_CITATIONS, 'at most MAX_CITATIONS');
  t.equal(result.citationsCut, true);
  t.same(
    result.citations.slice(0, 4).map((c) => [c.storedEmailId, c.cited]),
    [
      ['e1', true],
      ['e2', true],
      ['e3', true],
      ['e100', false],
    ],
    'a message reached again keeps its first position; only bracketed references count',
  );
  t.equal([...result.answer].length, MAX_ANSWER_CHARACTERS);
  t.equal(result.answerCut, true);
  t.equal(result.retrievalCut, true);
  t.equal(result.retrievalMode, 'lexical', 'one lookup ranked by words alone');
  t.same([...outcome.degradation].sort(), ['answer-cut', 'citations-cut', 'lexical-only', 'retrieval-cut']);
  t.match(results(chat.requests[2])[0], /<email ref="E2"/, 'the second lookup names a message already reached by its first reference');
});

t.test('the adversarial set stays inside its elements', async (t) => {
  const { chat, run } = await setup(t);
  chat.script(search({ queryText: 'harbourmaster' }), { kind: 'text', text: 'Notices [E1].' });
  const extracts = injectionSet.map((m, i) => ({ ...found(i + 1, m.body), subject: m.subject, senderAddress: m.from }));
  const outcome = await run('Summarise the notices', () => ({ found: extracts, lexicalOnly: false, cut: false }));
  t.equal(outcome.ending, 'answered');
  const envelope = results(chat.requests[1])[0]!;
  const lines = envelope.split('\n');
  t.equal(lines[0]!.startsWith('<mail-lookup results="6"'), true);
  t.equal(lines.at(-1), '</mail-lookup>');
  const opens = lines.filter((l) => l.startsWith('<email '));
  t.equal(opens.length, injectionSet.length, 'one element per message');
  t.equal(lines.filter((l) => l === '</email>').length, injectionSet.length, 'each closed once, by the run');
  for (const line of lines.slice(1, -1)) {
    if (line.startsWith('<email ') || line === '</email>') continue;
    t.notMatch(line, /[<>]/, 'no markup from the mail survives: every < and > is escaped');
  }
  for (const open of opens) t.match(open, /^<email ref="E\d+" account="alice" folder="inbox"( [a-z]+="[^"]*")*>$/, 'attributes stay attributes');
  const system = (chat.requests[1]!.body as Json).messages[0].content as string;
  t.equal(system, (chat.requests[0]!.body as Json).messages[0].content, 'the instruction did not change');
});

t.test('a model that keeps looking up is stopped by the call bound; the last call asks for the answer', async (t) => {
  const { chat, run } = await setup(t);
  chat.setDefault(search({ queryText: 'again' }));
  const outcome = await run('Loop?', () => ({ found: [], lexicalOnly: false, cut: false }), { maxCalls: 3 });
  t.equal(outcome.ending, 'calls-bound-reached');
  t.equal(chat.requests.length, 3);
  t.same(
    chat.requests.map((r) => r.toolChoice),
    ['auto', 'auto', 'none'],
  );
  t.match(results(chat.requests[1])[0], /results="0"[\s\S]*No email matched/);
});

t.test('provider failures end the run with their ending and keep the failure', async (t) => {
  const { chat, run } = await setup(t);
  chat.script({ kind: 'status', status: 401 });
  const refused = await run('x?', () => ({ found: [], lexicalOnly: false, cut: false }));
  t.equal(refused.ending, 'provider-refused-credential');
  t.equal(refused.failure?.publicCode, 71001);
  chat.script({ kind: 'empty-text' });
  t.equal((await run('x?', () => ({ found: [], lexicalOnly: false, cut: false }))).ending, 'provider-produced-no-text');
});

t.test('the request deadline ends a run whose call hangs', async (t) => {
  const chat = await startChatStandin();
  t.teardown(() => chat.close());
  const client = createChatClient({ baseAddress: chat.baseAddress, model: 'scripted', apiKeyRef: null, deadlineMs: 60_000 });
  t.teardown(() => client.close());
  chat.script({ kind: 'hang' });
  const started = Date.now();
  const outcome = await runQuestion('x?', {
    chat: client,
    lookup: async () => ({ found: [], lexicalOnly: false, cut: false }),
    maxCalls: 3,
    maxInputCharacters: 100_000,
    signal: AbortSignal.timeout(300),
    now: Date.now,
  });
  t.equal(outcome.ending, 'deadline-passed', 'the caller’s deadline, not the endpoint’s minute');
  t.ok(Date.now() - started < 5_000, 'ended near the deadline');
});
