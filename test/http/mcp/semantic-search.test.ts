/**
 * `search_emails` through `/mcp` (the official SDK client) before and after
 * an activation, with the running service, a real Dovecot and the
 * OpenAI-compatible stand-in as the provider (its vectors are hashed bags
 * of words: texts sharing a word are near). A two-word query whose words no
 * single message holds together is found by nothing lexically; once the
 * mailbox is embedded, the message holding one of them ranks first, the
 * answer says `hybrid` / `available` with the coverage, the filters still
 * hold, and a provider that refuses its credential degrades the answer to
 * lexical (never an error). The query never reaches a log line.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t from 'tap';
import { EMBEDDING_ID } from '../../../actors/embedding/protocol.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { reservePort } from '../../helpers/ports.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;
/** Its words hash apart from the target's other words in the stand-in's 512 buckets (a collision of opposite signs would cancel). */
const QUERY = 'balance unpaid';

function message(id: number, from: string, subject: string, body: string): Buffer {
  return Buffer.from(
    [
      `From: ${from}`,
      'To: hana@example.org',
      `Subject: ${subject}`,
      `Date: Mon, ${String(id).padStart(2, '0')} Jun 2026 09:00:00 +0000`,
      `Message-ID: <semantic-${id}@example.org>`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      body,
      '',
    ].join('\r\n'),
  );
}

t.test('search_emails ranks both ways once activated, and lexically when the provider fails', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'hana', password: 'pw-hana' }] });
  t.teardown(() => dovecot.stop());
  const target = message(
    1,
    'Billing <billing@vendor.example>',
    'Account statement for May',
    'Your balance remains outstanding after sixty days. Please settle it this week.',
  );
  const mail = [
    target,
    message(2, 'Lee <lee@friends.example>', 'Picnic on Saturday', 'Bring sandwiches and a blanket to the park.'),
    message(3, 'Ops <ops@vendor.example>', 'Maintenance window', 'The database migration runs tonight between one and three.'),
    ...[...generateMailbox({ seed: 31, count: 20, profile: 'small' })].map((m) => m.raw),
  ];
  await writeMaildir(
    dovecot,
    'hana',
    'INBOX',
    mail.map((raw) => ({ raw })),
  );
  const standin = await startEmbeddingStandin({ dimensions: 512 });
  t.teardown(() => standin.close());
  const port = await reservePort();
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'hana', user: 'hana', folders: [{ Alias: 'inbox' }] }], {
    McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: port },
    Embeddings: { BaseAddress: standin.baseAddress, Model: 'bag-of-words', Dimensions: 512 },
    EmbeddingBackfill: { Interval: '00:10:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow('hana', 120_000);

  const client = new Client({ name: 'semantic-search-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  t.teardown(() => client.close());
  const search = async (args: Json): Promise<Json> => {
    const result = (await client.callTool({ name: 'search_emails', arguments: args })) as CallToolResult;
    if (result.isError) throw new Error(`search_emails refused: ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent as Json;
  };

  const before = await search({ queryText: QUERY });
  t.same(before.matches, [], 'no message holds both words: lexical search finds nothing');
  t.match(before, { retrievalMode: 'lexical', semanticSearch: 'inactive' });
  t.notOk('semanticCoverage' in before, 'no coverage while nothing is activated');
  t.equal(standin.requests.length, 0, 'a search before the activation sends nothing to the provider');

  const embedding = sync.service.supervisor.ref(EMBEDDING_ID);
  const activated = await embedding.ask({ type: 'embedding.activate' });
  t.equal(activated.outcome, 'started');
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await embedding.ask({ type: 'embedding.status' });
    if (status.serving !== null && status.serving.emailCount > 0 && status.serving.embeddedEmailCount === status.serving.emailCount) break;
    if (Date.now() > deadline) throw new Error(`the mailbox was not embedded: ${JSON.stringify(status)}`);
    await new Promise((r) => setTimeout(r, 50));
  }

  const after = await search({ queryText: QUERY, resultLimit: 5 });
  t.match(after, { retrievalMode: 'hybrid', semanticSearch: 'available' });
  t.equal(after.matches[0]?.subject, 'Account statement for May', 'the message sharing a word with the query ranks first');
  t.equal(after.semanticCoverage.embeddedEmailCount, after.semanticCoverage.emailCount, 'the coverage says the whole mailbox was seen');
  t.equal(after.semanticCoverage.emailCount, mail.length);

  const filtered = await search({ queryText: QUERY, senderAddress: 'lee@friends.example' });
  t.same(
    filtered.matches.map((m: Json) => m.subject),
    ['Picnic on Saturday'],
    'a filter holds for the semantic half too: only the sender’s mail, however far',
  );

  standin.setDefault({ kind: 'status', status: 401 });
  const degraded = await search({ queryText: QUERY });
  t.match(degraded, { retrievalMode: 'lexical', semanticSearch: 'degraded', matches: [] }, 'a refusing provider degrades the answer, never fails it');
  t.ok(degraded.semanticCoverage, 'the coverage of the serving generation is still stated');

  await sync.service.stop();
  t.notOk(sync.logs.raw().includes(QUERY), 'the query reaches no log line');
  t.notOk(sync.logs.raw().includes('sixty days'), 'nor any passage');
});
