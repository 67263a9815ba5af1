/**
 * Text that repeats earlier mail is sent to the provider once per
 * generation (actors/embedding/repeats.ts): a copy of a message forwarded by
 * someone else, its lines quoted with `>` and wrapped differently, is not
 * sent again; it takes the vector of the text it repeats, and `search_emails`
 * through `/mcp` still finds it by meaning alone; a later arrival repeating
 * it takes the vector stored with the text's hash. Real Dovecot, the running
 * service, the OpenAI-compatible stand-in counting what it receives.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { EMBEDDING_ID } from '../../../actors/embedding/protocol.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { saveMessage, writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { eventually } from '../../helpers/eventually.ts';
import { reservePort } from '../../helpers/ports.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;
/** No message holds both words: only the vectors find anything (as in test/http/mcp/semantic-search.test.ts). */
const QUERY = 'balance unpaid';
const SUBJECT = 'Account statement for May';
const FORWARDER = 'kit@household.example';

function message(id: number, from: string, subject: string, body: string): { raw: Buffer } {
  const headers = [`From: ${from}`, 'To: ivo@example.org', `Subject: ${subject}`, `Date: Mon, ${String(id).padStart(2, '0')} Jun 2026 09:00:00 +0000`];
  return {
    raw: Buffer.from([...headers, `Message-ID: <repeat-${id}@example.org>`, 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n')),
  };
}

t.test('a repeated passage is sent once and its copy is found by search', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'ivo', password: 'pw-ivo' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'ivo', 'INBOX', [
    message(1, 'Billing <billing@vendor.example>', SUBJECT, 'Your balance remains outstanding after sixty days.\r\nPlease settle it this week.'),
    message(2, `Kit <${FORWARDER}>`, SUBJECT, '> Your balance remains outstanding\r\n>   after sixty days.\r\n> Please settle it\r\n> this week.'),
    message(3, 'Lee <lee@friends.example>', 'Picnic on Saturday', 'Bring sandwiches and a blanket to the park.'),
  ]);
  const standin = await startEmbeddingStandin({ dimensions: 512 });
  t.teardown(() => standin.close());
  const port = await reservePort();
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'ivo', user: 'ivo', folders: [{ Alias: 'inbox' }] }], {
    McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: port },
    Embeddings: { BaseAddress: standin.baseAddress, Model: 'bag-of-words', Dimensions: 512 },
    EmbeddingBackfill: { Interval: '00:10:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow('ivo', 120_000);

  const embedding = sync.service.supervisor.ref(EMBEDDING_ID);
  t.equal((await embedding.ask({ type: 'embedding.activate' })).outcome, 'started');
  const served = await eventually('the mailbox embedded', async () => {
    const s = await embedding.ask({ type: 'embedding.status' });
    return s.serving !== null && s.serving.emailCount === 3 && s.serving.embeddedEmailCount === 3 && s;
  });
  t.equal(served.serving?.embeddedEmailCount, 3, 'the copy counts as embedded');

  const sent = standin.requests.filter((r) => r.answered === 'ok').flatMap((r) => r.inputs);
  t.equal(sent.filter((text) => text.includes('sixty days')).length, 1, 'the statement is sent once, not again for its quoted copy');
  t.equal(sent.length, 2, 'two distinct texts, two sent');

  const client = new Client({ name: 'repeated-passages-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  t.teardown(() => client.close());
  const result = (await client.callTool({ name: 'search_emails', arguments: { queryText: QUERY, senderAddress: FORWARDER } })) as CallToolResult;
  t.notOk(result.isError, 'search_emails answers');
  const found = result.structuredContent as Json;
  t.match(found, { retrievalMode: 'hybrid', semanticSearch: 'available' });
  t.same(
    found.matches.map((m: Json) => m.subject),
    [SUBJECT],
    'the forwarded copy is found by meaning alone, with the vector of the text it repeats',
  );

  // A later arrival repeating it is embedded by another pass: it takes the vector stored with the text's hash.
  await saveMessage(
    dovecot,
    'ivo',
    'INBOX',
    message(4, 'Mo <mo@household.example>', SUBJECT, '>> Your balance remains outstanding after sixty days.\r\n>> Please settle it this week.').raw,
  );
  await sync.syncNow('ivo', 120_000);
  await eventually('the arrival embedded', async () => {
    const s = await embedding.ask({ type: 'embedding.status' });
    return s.serving?.emailCount === 4 && s.serving.embeddedEmailCount === 4;
  });
  const sentSince = standin.requests
    .filter((r) => r.answered === 'ok')
    .flatMap((r) => r.inputs)
    .filter((text) => text !== QUERY);
  t.same(sentSince, sent, 'the arrival repeating stored text sent nothing (the query placed for the search aside)');

  await sync.service.stop();
  t.notOk(sync.logs.raw().includes('sixty days'), 'no passage reaches a log line');
});
