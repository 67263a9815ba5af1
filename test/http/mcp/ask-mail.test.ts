/**
 * `ask_mail` end to end: the running service mirroring two accounts of a
 * real Dovecot, the embedding stand-in as the provider, the scripted chat
 * stand-in as the endpoint (the real OpenAI wire format), and agents through
 * the official SDK client.
 *
 * One deployment walks the whole life of the tool: withheld until a query
 * can be placed (56001, "right now"), offered once a generation serves, a
 * run of several rounds whose citations are exactly what it read (each reads
 * back through get_email_content), the scope the model cannot widen, the
 * adversarial set of test/fixtures/prompt-injection.ts, the call bound, each
 * provider fault (54001 to the client, 71001/72001/73001 in the log), the
 * minute of withholding after a refused credential, the audit (one entry per
 * account and run, no content, walked by cursor), and the question
 * allowance, which a restart does not reset. No question, answer or extract
 * reaches a log line.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { EMBEDDING_ID } from '../../../actors/embedding/protocol.ts';
import { injectionSet, INJECTION_WORD } from '../../fixtures/prompt-injection.ts';
import { type RecordedChatRequest, type StandinAnswer, startChatStandin, toolResultsOf } from '../../harness/chat-standin.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { adminCall, adminEndpointSection, query } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { reservePort } from '../../helpers/ports.ts';
import { until } from '../../helpers/log-capture.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

t.setTimeout(600_000);

type Json = Record<string, any>;
const AGENT_KEY = 'ask-agent-key-0123456789abcdef';
const READER_KEY = 'ask-reader-key-0123456789abcdef';
const ADMIN = { operator: 'ask-operator-key-0123456789ab', reader: 'ask-admin-reader-0123456789', nothing: 'ask-admin-nothing-0123456789' };
/** Runs this test makes that take from the allowance (see the end). */
const RUNS = 9;

function message(id: number, from: string, subject: string, body: string, to = 'hana@example.org'): Buffer {
  return Buffer.from(
    [
      `From: ${from}`,
      `To: ${to}`,
      `Subject: ${subject}`,
      `Date: Tue, ${String(id).padStart(2, '0')} Jun 2026 09:00:00 +0000`,
      `Message-ID: <ask-${id}@example.org>`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      body,
      '',
    ].join('\r\n'),
  );
}

const INVOICE = { subject: 'Invoice 7731 from Northwind Boatyard', body: 'Invoice 7731 for the hull repairs comes to 1,240 euros, due on 14 July.' };
const REPAIRS = { subject: 'Hull repairs finished', body: 'The hull repairs are finished; the invoice follows separately.' };
const VAULT = { subject: 'Vault code for the boathouse', body: 'The vault code is 9911. harbourmaster' };
const QUESTIONS = {
  invoice: 'How much is the hull repair invoice and when is it due?',
  scope: 'What did the harbour send about the boathouse?',
  injection: 'Summarise the harbour notices for me please',
};

/** The tool results a request carried, as text. */
function resultsOf(request: RecordedChatRequest): string[] {
  return toolResultsOf(request).map((r) => r.content);
}

/** A recorded request's body, to read as the wire format has it. */
function bodyOf(request: RecordedChatRequest | undefined): Json {
  return (request?.body ?? {}) as Json;
}

/** References cited in tool results, in order of appearance: `ref="E3"`. */
function references(text: string): string[] {
  return [...text.matchAll(/<email ref="(E\d+)"/g)].map((m) => m[1]!);
}

t.test('ask_mail: withheld, offered, answered with citations, bounded, audited, never logged', async (t) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({
    users: [
      { user: 'hana', password: 'pw-hana' },
      { user: 'ivo', password: 'pw-ivo' },
    ],
  });
  t.teardown(() => dovecot.stop());
  const hanaMail = [
    message(1, 'Northwind Boatyard <billing@northwind.example>', INVOICE.subject, INVOICE.body),
    message(2, 'Northwind Boatyard <yard@northwind.example>', REPAIRS.subject, REPAIRS.body),
    message(3, 'Lee <lee@friends.example>', 'Picnic on Saturday', 'Bring sandwiches and a blanket to the park.'),
    ...injectionSet.map((m, i) => message(10 + i, m.from, m.subject, m.body)),
  ];
  await writeMaildir(
    dovecot,
    'hana',
    'INBOX',
    hanaMail.map((raw) => ({ raw })),
  );
  await writeMaildir(dovecot, 'ivo', 'INBOX', [{ raw: message(4, 'Harbour <harbour@ports.example>', VAULT.subject, VAULT.body, 'ivo@example.org') }]);

  const embeddings = await startEmbeddingStandin({ dimensions: 512 });
  t.teardown(() => embeddings.close());
  const chat = await startChatStandin();
  t.teardown(() => chat.close());
  const key = (name: string, secret: string): string => {
    writeFileSync(join(dir, name), secret, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const adminPort = await reservePort();
  const sections = {
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'agent', SecretReference: key('mcp-agent.key', AGENT_KEY), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reader', SecretReference: key('mcp-reader.key', READER_KEY), Lifetime: 'NoLimit' }, Permissions: ['service.mail.read'] },
      ],
    },
    AdminEndpoint: adminEndpointSection(dir, adminPort, ADMIN),
    Embeddings: { BaseAddress: embeddings.baseAddress, Model: 'bag-of-words', Dimensions: 512 },
    EmbeddingBackfill: { Interval: '00:10:00' },
    Answering: {
      // Three seconds: the hang case waits it out, and a loaded machine's loopback round trip stays well inside it.
      Endpoints: [{ Alias: 'standin', BaseAddress: chat.baseAddress, Model: 'scripted', Deadline: '00:00:03', MaxCallsPerQuestion: 4 }],
      MaxQuestionsPerPeriod: RUNS,
      PassagesPerLookup: 10,
    },
  };
  const accounts = [
    { id: 'hana', user: 'hana', folders: [{ Alias: 'inbox' }] },
    { id: 'ivo', user: 'ivo', folders: [{ Alias: 'inbox' }] },
  ];
  let sync: SyncService = await startSyncService(dir, dovecot, accounts, sections);
  const logs = [sync.logs];
  t.teardown(() => sync.service.stop());
  await sync.syncNow('hana', 120_000);
  await sync.syncNow('ivo', 120_000);

  const connect = async (apiKey: string): Promise<Client> => {
    const client = new Client({ name: 'ask-mail-test', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
    t.teardown(() => client.close());
    return client;
  };
  let agent = await connect(AGENT_KEY);
  const reader = await connect(READER_KEY);
  const listed = async (client: Client): Promise<string[]> => (await client.listTools()).tools.map((tool) => tool.name);
  const ask = async (args: Json): Promise<CallToolResult> => (await agent.callTool({ name: 'ask_mail', arguments: args })) as CallToolResult;
  const answerOf = (result: CallToolResult): Json => {
    if (result.isError) throw new Error(`ask_mail refused: ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent as Json;
  };
  const refusal = (result: CallToolResult): Json => {
    t.ok(result.isError, 'the call is refused');
    return result.structuredContent as Json;
  };

  await t.test('withheld until an embedding profile can place a query', async (t) => {
    t.notOk((await listed(agent)).includes('ask_mail'), 'not listed before an activation');
    const withheld = refusal(await ask({ question: QUESTIONS.invoice }));
    t.equal(withheld.code, 56001);
    t.match(withheld.message, /right now/, 'the message says answers are impossible right now, not never');
    t.equal(chat.requests.length, 0, 'nothing was sent to the chat endpoint');
    await t.rejects(
      reader.callTool({ name: 'ask_mail', arguments: { question: 'x' } }),
      /Unknown tool: 'ask_mail'/,
      'a caller not granted it meets an unknown tool',
    );
  });

  const embedding = sync.service.supervisor.ref(EMBEDDING_ID);
  t.equal((await embedding.ask({ type: 'embedding.activate' })).outcome, 'started');
  const embedded = Date.now() + 60_000;
  for (;;) {
    const status = await embedding.ask({ type: 'embedding.status' });
    if (status.serving !== null && status.serving.emailCount > 0 && status.serving.embeddedEmailCount === status.serving.emailCount) break;
    if (Date.now() > embedded) throw new Error('the mailbox was not embedded');
    await new Promise((r) => setTimeout(r, 50));
  }

  const answers: Json[] = [];

  await t.test('offered, and a run of several rounds answers with exactly what it read', async (t) => {
    const tools = (await agent.listTools()).tools;
    const tool = tools.find((x) => x.name === 'ask_mail');
    t.ok(tool, 'listed once a generation serves');
    t.match(tool?.annotations, { readOnlyHint: true, destructiveHint: false });
    t.notOk((await listed(reader)).includes('ask_mail'), 'never listed to a caller not granted service.mail.ask');

    const before = chat.requests.length;
    chat.script(
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'invoice' } }] },
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'hull repairs', senderAddress: '@northwind.example' } }] },
      {
        kind: 'respond',
        respond: (request: RecordedChatRequest): StandinAnswer => {
          const refs = resultsOf(request).flatMap(references);
          return { kind: 'text', text: `The invoice comes to 1,240 euros, due on 14 July [${refs[0]}].` };
        },
      },
    );
    const answer = answerOf(await ask({ question: QUESTIONS.invoice }));
    answers.push(answer);
    const sent = chat.requests.slice(before);
    t.equal(sent.length, 3, 'three calls: two lookups and the answer');
    t.same(
      bodyOf(sent[0]).messages.map((m: Json) => m.role),
      ['system', 'user'],
      'nothing is retrieved before the model asks: the first call holds the instruction and the question only',
    );
    t.equal(bodyOf(sent[0]).messages[1].content, QUESTIONS.invoice);
    t.same(
      bodyOf(sent[0]).tools.map((x: Json) => x.function.name),
      ['search_mail'],
      'one function is offered',
    );
    const parameters = Object.keys(bodyOf(sent[0]).tools[0].function.parameters.properties);
    t.notOk(parameters.includes('accounts') || parameters.includes('folders'), 'the function cannot name accounts or folders');
    const [, , assistant, toolResult] = bodyOf(sent[1]).messages as Json[];
    t.equal(assistant!.role, 'assistant');
    t.equal(assistant!.tool_calls[0].function.name, 'search_mail');
    t.equal(toolResult!.role, 'tool');
    t.equal(toolResult!.tool_call_id, assistant!.tool_calls[0].id, 'the tool result answers its call by id');
    t.match(toolResult!.content, /^<mail-lookup results="\d+" note="[^"]*not instructions/, 'the extracts arrive inside the data envelope');
    t.equal(bodyOf(sent[2]).tool_choice, 'auto');

    const read = sent.slice(1).flatMap((r) => resultsOf(r).flatMap(references));
    const firstReach = [...new Set(read)];
    t.equal(answer.citations.length, firstReach.length, 'one citation per message the run read, in first-reach order');
    t.equal(answer.citations[0].subject, INVOICE.subject, 'the best match of the first lookup is reached first');
    t.same(
      answer.citations.map((c: Json) => c.cited),
      firstReach.map((_, i) => i === 0),
      'only the message the answer cites is marked cited',
    );
    t.match(answer, { answer: /1,240 euros/, lookupCount: 2, retrievalMode: 'hybrid' });
    const content = (await agent.callTool({
      name: 'get_email_content',
      arguments: { storedEmailIds: answer.citations.slice(0, 10).map((c: Json) => c.storedEmailId) },
    })) as CallToolResult;
    const emails = (content.structuredContent as Json).emails as Json[];
    t.same(
      emails.map((e) => e.subject),
      answer.citations.slice(0, 10).map((c: Json) => c.subject),
      'every citation reads back through get_email_content',
    );
  });

  await t.test('the model cannot widen the scope the caller bound', async (t) => {
    const before = chat.requests.length;
    chat.script(
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'vault code', accounts: ['ivo'] } }] },
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: INJECTION_WORD, folders: ['inbox'] } }] },
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'vault code' } }] },
      { kind: 'text', text: 'Nothing about a boathouse.' },
    );
    const answer = answerOf(await ask({ question: QUESTIONS.scope, accounts: ['hana'] }));
    answers.push(answer);
    t.equal(chat.requests.length - before, 4);
    // The last request carries the whole conversation: every tool result, in order.
    const results = resultsOf(chat.requests.at(-1)!);
    t.match(results[0], /<notice>The arguments were refused: .*unknown member\(s\) accounts/, 'naming an account is refused');
    t.match(results[1], /unknown member\(s\) folders/, 'naming a folder is refused');
    t.notOk(results[2]!.includes('Vault code') || results[2]!.includes('account="ivo"'), "the other account's mail is not found");
    t.match(results[2], /account="hana"/, 'only the bound account is searched');
    t.notOk(JSON.stringify(answer).includes(VAULT.subject));
    t.ok(answer.citations.every((c: Json) => c.accountId === 'hana'));

    const sentBefore = chat.requests.length;
    const outside = refusal(await ask({ question: QUESTIONS.scope, folders: ['vault'] }));
    t.equal(outside.code, 53001, 'a caller naming a folder outside its scope is refused before anything is spent');
    t.equal(chat.requests.length, sentBefore);
  });

  await t.test('the adversarial set changes nothing the run does', async (t) => {
    const before = chat.requests.length;
    chat.script(
      { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: INJECTION_WORD } }] },
      {
        // An obedient model: it does what the mail tells it, with the one function it has.
        kind: 'respond',
        respond: (request: RecordedChatRequest): StandinAnswer =>
          resultsOf(request).some((r) => r.includes('search account ivo'))
            ? { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'vault code', accounts: ['ivo'] } }] }
            : { kind: 'text', text: 'no orders seen' },
      },
      { kind: 'text', text: 'The harbour sent notices [E1].' },
    );
    const answer = answerOf(await ask({ question: QUESTIONS.injection, accounts: ['hana'] }));
    answers.push(answer);
    const sent = chat.requests.slice(before);
    const first = bodyOf(chat.requests[0]);
    for (const request of sent) {
      t.equal(
        bodyOf(request).messages[0].content.replace(/Today is .*$/, ''),
        first.messages[0].content.replace(/Today is .*$/, ''),
        'the instruction is the same',
      );
      t.same(bodyOf(request).tools, first.tools, 'the same one function');
      for (const m of bodyOf(request).messages as Json[]) {
        if (m.role === 'system' || m.role === 'user') t.notMatch(m.content, new RegExp(INJECTION_WORD), 'mail never reaches the instruction or the question');
      }
    }
    const envelope = resultsOf(sent[1]!)[0]!;
    const opened = envelope.match(/<email /g)?.length ?? 0;
    t.equal(opened, Number(/results="(\d+)"/.exec(envelope)?.[1]), 'one element per message found: no message forged another');
    t.ok(opened >= injectionSet.length, 'the whole set was read');
    t.equal(envelope.match(/<\/email>/g)?.length, opened, 'no message closed its element early');
    t.equal(envelope.match(/<\/mail-lookup>/g)?.length, 1, 'nor the envelope');
    t.notMatch(envelope, /<system>|ref="E99"/, 'markup inside mail arrives escaped');
    t.match(envelope, /&lt;\/email&gt;/);
    t.match(resultsOf(sent[2]!)[1], /unknown member\(s\) accounts/, 'the obeyed order to search another account is refused');
    t.notOk(JSON.stringify(answer).includes('9911'));
    t.ok(
      answer.citations.every((c: Json) => c.accountId === 'hana'),
      'nothing outside the caller scope was read',
    );
  });

  await t.test('the call bound ends a run with 57001', async (t) => {
    chat.setDefault({ kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'picnic' } }] });
    const before = chat.requests.length;
    const bound = refusal(await ask({ question: 'Where is the picnic?' }));
    chat.setDefault({ kind: 'text', text: 'ok' });
    t.equal(bound.code, 57001);
    t.match(bound.message, /cost bound of 4 calls/, 'the message says which bound');
    t.equal(chat.requests.length - before, 4, 'no call past the bound');
    t.equal(bodyOf(chat.requests.at(-1)).tool_choice, 'none', 'the last call asks for the answer');
  });

  await t.test('provider faults reach the client as 54001 and the log with their code', async (t) => {
    const cases: Array<[StandinAnswer, number]> = [
      [{ kind: 'status', status: 500 }, 72001],
      [{ kind: 'hang' }, 72001],
      [{ kind: 'empty-text' }, 73001],
      [{ kind: 'malformed-json' }, 73001],
    ];
    for (const [fault, code] of cases) {
      chat.setDefault(fault);
      const failed = refusal(await ask({ question: 'Anything from the yard?' }));
      chat.setDefault({ kind: 'text', text: 'ok' });
      t.equal(failed.code, 54001, `${fault.kind}: the client sees 54001`);
      t.match(failed.message, /under run [0-9a-f-]{36}$/, 'naming the run, so its log lines can be found');
      await t.resolves(
        until(() => sync.logs.events('answering.provider-failed').some((r) => r.code === code && !seen.has(r))),
        `${fault.kind}: the log carries ${code}`,
      );
      for (const r of sync.logs.events('answering.provider-failed')) seen.add(r);
    }
    t.ok((await listed(agent)).includes('ask_mail'), 'a provider that fails without refusing keeps the tool offered');

    chat.setDefault({ kind: 'status', status: 401 });
    const refused = refusal(await ask({ question: 'Anything from the yard?' }));
    chat.setDefault({ kind: 'text', text: 'ok' });
    t.equal(refused.code, 54001);
    await until(() => sync.logs.events('answering.provider-failed').some((r) => r.code === 71001));
    t.notOk((await listed(agent)).includes('ask_mail'), 'withheld for a minute after the endpoint refused');
    const sent = chat.requests.length;
    const withheld = refusal(await ask({ question: 'Anything from the yard?' }));
    t.equal(withheld.code, 56001);
    t.match(withheld.message, /refused its credential; ask again after \d{4}-/, 'the message says when');
    t.equal(chat.requests.length, sent, 'nothing is sent while withheld');
  });

  await t.test('the audit: one entry per account and run, no content, walked by cursor', async (t) => {
    const admin = `http://127.0.0.1:${adminPort}/api/admin/answering/audit`;
    const walk = async (account: string): Promise<Json[]> => {
      const entries: Json[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 50; page += 1) {
        const res = await adminCall(`${admin}${query({ account, pageSize: 1, cursor })}`, { apiKey: ADMIN.operator });
        t.equal(res.status, 200);
        const body = res.json();
        entries.push(...body.entries);
        for (const text of [...Object.values(QUESTIONS), INVOICE.subject, INVOICE.body, '1,240 euros', ...injectionSet.map((m) => m.subject)])
          t.notOk(res.body.includes(text), 'the audit holds no question, answer, subject or extract');
        cursor = body.nextCursor;
        if (cursor === undefined) break;
      }
      return entries;
    };
    const hana = await walk('hana');
    const ivo = await walk('ivo');
    t.equal(new Set([...hana, ...ivo].map((e) => e.runId)).size, RUNS, 'every run that took a question left an entry');
    t.equal(hana.length, RUNS, 'each run covered hana');
    t.equal(ivo.length, RUNS - 2, 'the runs bound to hana left no entry for ivo');
    t.ok(
      hana.every((e, i) => i === 0 || Date.parse(e.endedAt) <= Date.parse(hana[i - 1]!.endedAt)),
      'newest first',
    );
    const invoiceRun = hana.at(-1)!;
    t.match(invoiceRun, { endpointAlias: 'standin', ending: 'answered', instructionVersion: /\S/ });
    const invoiceCitations = answers[0]!.citations as Json[];
    t.same(
      invoiceRun.reads.map((r: Json) => [r.position, r.storedEmailId, r.cited]),
      invoiceCitations.flatMap((c, position) => (c.accountId === 'hana' ? [[position, c.storedEmailId, c.cited]] : [])),
      "hana's reads are her citations: positions in first-reach order, and which were cited",
    );
    const ivoRun = ivo.at(-1)!;
    t.equal(ivoRun.runId, invoiceRun.runId, 'the run across both accounts left one entry per account, sharing the run id');
    t.same(
      ivoRun.reads.map((r: Json) => r.storedEmailId),
      invoiceCitations.filter((c) => c.accountId === 'ivo').map((c) => c.storedEmailId),
    );
    t.match(hana[0], { ending: 'provider-refused-credential' });
  });

  await t.test('the allowance outlives a restart', async (t) => {
    await sync.service.stop();
    sync = await startSyncService(dir, dovecot, accounts, sections);
    logs.push(sync.logs);
    agent = await connect(AGENT_KEY);
    t.ok((await listed(agent)).includes('ask_mail'), 'offered again after the restart');
    const before = chat.requests.length;
    const spent = refusal(await ask({ question: 'One more?' }));
    t.equal(spent.code, 57001);
    t.match(spent.message, /allowance of this period is spent/, 'the message says it is the period allowance');
    t.equal(chat.requests.length, before, 'refused before any call');
  });

  await sync.service.stop();
  const logged = logs.map((l) => l.raw()).join('');
  for (const text of [...Object.values(QUESTIONS), INVOICE.body, '1,240 euros', 'Nothing about a boathouse', INJECTION_WORD, VAULT.body])
    t.notOk(logged.includes(text), 'no question, answer or extract reaches a log line');
});

const seen = new Set<unknown>();
