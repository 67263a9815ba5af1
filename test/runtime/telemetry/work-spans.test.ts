/**
 * The spans of the work an actor does, against real peers, with an
 * in-process SDK in this thread (test/helpers/telemetry-sdk.ts): a folder of a synchronization run
 * (`imap.sync`, real Dovecot), a delivery attempt (`smtp.send`, a real SMTP
 * server), a chat call and an embedding call (`chat <model>`,
 * `embeddings <model>`, the OpenAI-compatible stand-ins). Each names what
 * the operator configured and how it ended; none carries a subject, an
 * address, a prompt, an input or the provider's words.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { SpanKind, trace } from '@opentelemetry/api';
import t, { type Test } from 'tap';
import { createChatClient } from '../../../actors/answering/chat-client.ts';
import { createProvider } from '../../../actors/embedding/providers.ts';
import { openSession } from '../../../actors/imap-sync/connection.ts';
import { ImapSyncConfig, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { SyncRun } from '../../../actors/imap-sync/sync-run.ts';
import { attemptDelivery } from '../../../actors/outbox/delivery.ts';
import { inSmtpSendSpan } from '../../../actors/outbox/send-span.ts';
import { SmtpSessions } from '../../../actors/outbox/smtp-sessions.ts';
import { loadConfig } from '../../../config/load.ts';
import { storeSlice } from '../../../config/store-slice.ts';
import { AppError } from '../../../runtime/errors.ts';
import { createLogger } from '../../../runtime/log.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openSlice } from '../../../runtime/store/open-slice.ts';
import { inSpan } from '../../../runtime/telemetry/tracing.ts';
import { systemChildren } from '../../../service/system-children.ts';
import { startChatStandin } from '../../harness/chat-standin.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { startSmtpServer } from '../../harness/smtp-server.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';
import { type SpanData, spanData } from '../../helpers/span-data.ts';
import { installTelemetrySdk } from '../../helpers/telemetry-sdk.ts';

t.setTimeout(120_000);

const SECRET = 'Zanzibar-lease-renewal';

function tracing(t: Test) {
  const sdk = installTelemetrySdk(t);
  return { finished: () => sdk.spans().map(spanData) };
}

function named(spans: SpanData[], name: string): SpanData[] {
  return spans.filter((s) => s.name === name);
}

t.test('imap.sync: one span per folder of a run, a child of where the run began, with its alias, account and outcome', async (t) => {
  const traces = tracing(t);
  const dovecot = await startDovecot({ users: [{ user: 'alice', password: 'pw-alice' }] });
  t.teardown(() => dovecot.stop());
  const raw = (i: number): string =>
    [
      `From: ${SECRET} <sender${i}@example.org>`,
      'To: alice@example.org',
      `Subject: ${SECRET} ${i}`,
      `Message-ID: <m${i}@example.org>`,
      '',
      `Body ${SECRET}`,
      '',
    ].join('\r\n');
  await appendMessages(dovecot, 'alice', 'INBOX', [{ raw: raw(1) }, { raw: raw(2) }, { raw: raw(3) }]);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'password'), 'pw-alice');
  const loaded = loadConfig({
    file: writeConfig(dir, {
      HealthEndpoints: { Port: 0 },
      Storage: { Database: join(dir, 'mailcairn.db') },
      Accounts: [
        {
          Id: 'alice',
          Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'alice', Password: `file:${join(dir, 'password')}` },
          Folders: [{ Alias: 'inbox' }, { Alias: 'archive', Path: `${SECRET}/Archive` }],
        },
      ],
    }),
    env: {},
  });
  const config = ImapSyncConfig.parse(systemChildren(loaded).find((c) => c.id === syncActorId('alice'))!.config);
  const db = openSlice(storeSlice(loaded));
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(db, ['alice']);
  let client: Awaited<ReturnType<typeof openSession>> | null = null;
  t.teardown(() => client?.close());
  // The parent the derivation writer's ask is given: the folder's span, named (the active context does not follow awaits).
  const derivedIn: Array<string | undefined> = [];
  // The run begins in the handler of a traced ask (its context given as `trace`, as the actor gives `ctx.trace`);
  // its steps come later, from timer messages outside any span, as in the actor.
  const run = await inSpan(
    'handle imap-sync',
    { kind: SpanKind.SERVER },
    async (_span, handled) =>
      new SyncRun({
        db,
        config,
        log: createLogger({ level: 'silent' }),
        async session(fresh) {
          if (client?.usable && !fresh) return client;
          client?.close();
          client = await openSession(config, { pass: 'pw-alice' });
          return client;
        },
        derive: async (parent) => {
          derivedIn.push(parent === undefined ? undefined : trace.getSpan(parent)?.spanContext().spanId);
          return { derived: 0, unreadable: [], missingRaw: 0 };
        },
        now: Date.now,
        trace: handled,
      }),
  );
  t.equal(trace.getActiveSpan(), undefined, 'the steps run outside any span');
  let summary = await run.step(0);
  while (summary === null) summary = await run.step(0);
  t.equal(summary.outcome, 'partial', 'the inbox mirrored, the archive matched no folder');
  const spans = traces.finished();
  const parent = named(spans, 'handle imap-sync')[0]!;
  const folders = named(spans, 'imap.sync');
  t.equal(folders.length, 2, 'one span per configured folder');
  const [inbox, archive] = folders;
  for (const span of folders) {
    t.equal(span.kind, SpanKind.CLIENT);
    t.equal(span.parentSpanId, parent.spanId, 'a child of the span the run began in');
    t.equal(span.traceId, parent.traceId);
  }
  t.same(inbox?.attributes, {
    'mailcairn.account': 'alice',
    'mailcairn.folder': 'inbox',
    'server.address': '127.0.0.1',
    'server.port': dovecot.port,
    'mailcairn.outcome': 'ok',
    'mailcairn.messages.stored': 3,
    'mailcairn.messages.unreadable': 0,
  });
  t.equal(inbox?.failed, false);
  t.equal(archive?.attributes['mailcairn.folder'], 'archive', 'the alias, never the configured path');
  t.equal(archive?.attributes['mailcairn.outcome'], 'no-such-folder');
  t.equal(archive?.failed, true);
  t.equal(archive?.attributes['error.type'], 'no-such-folder');
  t.ok(derivedIn.length > 0, 'the inbox asked the derivation writer');
  t.ok(
    derivedIn.every((id) => id === inbox?.spanId),
    "what a folder asks of the derivation writer is a child of the folder's span",
  );
  t.notOk(JSON.stringify(spans).includes(SECRET), 'no subject, address or server path in any span');
});

t.test('smtp.send: the configured server, the account and how the attempt ended; never a recipient', async (t) => {
  const traces = tracing(t);
  const smtp = await startSmtpServer({ security: 'None' });
  t.teardown(() => smtp.stop());
  const sessions = new SmtpSessions({ maxIdle: 1, idleMs: 1_000, maxMessages: 10 });
  t.teardown(() => sessions.closeAll());
  const config = { host: smtp.host, port: smtp.port, security: 'None' as const, username: null, oauth: false, sentCopy: false };
  const attempt = (to: string) =>
    inSmtpSendSpan('ann', config, undefined, () =>
      attemptDelivery(
        {
          accountId: 'ann',
          envelopeFrom: `${SECRET}@example.org`,
          raw: new TextEncoder().encode(`Subject: ${SECRET}\r\n\r\nbody\r\n`),
          recipients: [{ position: 0, address: to }],
        },
        config as never,
        async () => null,
        5_000,
        () => true,
        sessions,
      ),
    );
  t.equal((await attempt(`${SECRET}.ok@example.org`)).kind, 'answered');
  smtp.rcpt = () => ({ code: 550, message: `no such user ${SECRET}` });
  const refused = await attempt(`${SECRET}.refused@example.org`);
  t.equal(refused.kind, 'answered');
  const [sent, failed] = named(traces.finished(), 'smtp.send');
  t.equal(sent?.kind, SpanKind.CLIENT);
  t.same(sent?.attributes, { 'server.address': '127.0.0.1', 'server.port': smtp.port, 'mailcairn.account': 'ann', 'mailcairn.outcome': 'answered' });
  t.equal(sent?.failed, false);
  t.equal(failed?.failed, true, 'a refused recipient fails the attempt');
  t.equal(failed?.attributes['error.type'], 'recipients-refused', 'by its internal code');
  t.notOk(JSON.stringify(traces.finished()).includes(SECRET), 'no address, subject or server text in any span');
});

t.test('chat <model>: gen_ai attributes and token counts, the failure by its code; never the conversation', async (t) => {
  const traces = tracing(t);
  const standin = await startChatStandin();
  const client = createChatClient({ baseAddress: standin.baseAddress, model: 'stand-in-chat', apiKeyRef: null, deadlineMs: 5_000, retry: { maxAttempts: 1 } });
  t.teardown(async () => {
    await client.close();
    await standin.close();
  });
  standin.script({ kind: 'text', text: `The answer is ${SECRET}` }, { kind: 'status', status: 401, body: SECRET });
  const messages = [{ role: 'user' as const, content: `When is the ${SECRET}?` }];
  // After an await, as in the answering actor: the parent is named (`ctx.trace` there), the active context is gone.
  await inSpan('request', {}, async (_span, traced) => {
    await new Promise((resolve) => setImmediate(resolve));
    return client.complete({ messages }, new AbortController().signal, traced);
  });
  const err = await client.complete({ messages }, new AbortController().signal).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.code === 'E_LLM_CREDENTIAL_REFUSED');
  const [ok, refused] = named(traces.finished(), 'chat stand-in-chat');
  t.equal(ok?.kind, SpanKind.CLIENT);
  t.equal(ok?.parentSpanId, named(traces.finished(), 'request')[0]?.spanId, 'a child of the span it was called in');
  t.same(ok?.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'stand-in-chat',
    'gen_ai.provider.name': 'openai',
    'server.address': '127.0.0.1',
    'server.port': Number(new URL(standin.baseAddress).port),
    'gen_ai.usage.input_tokens': 10,
    'gen_ai.usage.output_tokens': 5,
  });
  t.equal(refused?.failed, true);
  t.equal(refused?.attributes['error.type'], 'E_LLM_CREDENTIAL_REFUSED');
  t.notOk(JSON.stringify(traces.finished()).includes(SECRET), 'neither the question, the answer nor the provider body');
});

t.test('embeddings <model>: gen_ai attributes and the count of texts, the failure by its code; never the texts', async (t) => {
  const traces = tracing(t);
  const standin = await startEmbeddingStandin({ dimensions: 8 });
  const provider = await createProvider(
    {
      profile: { provider: 'openai-compatible', model: 'stand-in-embed', dimensions: 8, distance: 'cosine' },
      baseAddress: `${standin.baseAddress}/v1?key=${SECRET}`,
      apiKeyRef: null,
      requestTimeoutMs: 5_000,
      batchSize: 8,
      localThreads: 1,
      passagesPerMessage: null,
    },
    createLogger({ level: 'silent' }),
  );
  t.teardown(async () => {
    await provider.close();
    await standin.close();
  });
  t.equal((await provider.embed([`${SECRET} one`, `${SECRET} two`])).length, 2);
  t.same(await provider.embed([]), [], 'an empty call makes no request');
  standin.script({ kind: 'status', status: 400, body: SECRET });
  const err = await provider.embed([`${SECRET} three`]).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.code === 'E_EMBED_BAD_REQUEST');
  const spans = named(traces.finished(), 'embeddings stand-in-embed');
  t.equal(spans.length, 2, 'one span per request, none for the empty call');
  t.same(spans[0]?.attributes, {
    'gen_ai.operation.name': 'embeddings',
    'gen_ai.request.model': 'stand-in-embed',
    'gen_ai.provider.name': 'openai',
    'server.address': '127.0.0.1',
    'server.port': Number(new URL(standin.baseAddress).port),
    'mailcairn.embedding.inputs': 2,
  });
  t.equal(spans[0]?.kind, SpanKind.CLIENT);
  t.equal(spans[1]?.failed, true);
  t.equal(spans[1]?.attributes['error.type'], 'E_EMBED_BAD_REQUEST');
  t.notOk(JSON.stringify(traces.finished()).includes(SECRET), 'neither the texts, the address query nor the provider body');
});
