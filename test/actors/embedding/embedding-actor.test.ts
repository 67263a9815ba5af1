/**
 * The embedding actor in the running service, against a real Dovecot and
 * the OpenAI-compatible stand-in (two of them: one per declared profile):
 * nothing is sent before an operator activates; activation embeds the
 * mailbox in passes and counts every character sent; arrivals are embedded
 * without waiting for the sweep; a changed profile reindexes while the old
 * generation keeps placing queries; cancellation keeps the serving one; a
 * spend bound makes work wait and says so; the spend survives a restart; no
 * log line carries a subject, an address or the query.
 */
import t from 'tap';
import { EMBEDDING_ID } from '../../../actors/embedding/protocol.ts';
import { type EmbeddingStandin, startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { saveMessage, writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { type SyncService, startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const COUNT = 30;
const QUERY = 'quarterly invoice reconciliation overdue';

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function embedding(sync: SyncService) {
  const ref = sync.service.supervisor.ref(EMBEDDING_ID);
  return {
    status: () => ref.ask({ type: 'embedding.status' }),
    forecast: () => ref.ask({ type: 'embedding.forecast' }),
    activate: () => ref.ask({ type: 'embedding.activate' }),
    cancel: () => ref.ask({ type: 'embedding.cancel-reindex' }),
    place: (text: string) => ref.ask({ type: 'embedding.place-query', text }),
  };
}

const sentCharacters = (...standins: EmbeddingStandin[]): number =>
  standins.flatMap((s) => s.requests.filter((r) => r.answered === 'ok')).reduce((n, r) => n + r.inputs.reduce((m, text) => m + [...text].length, 0), 0);

const embeddingsConfig = (standin: EmbeddingStandin, model: string, dimensions: number, extra: Record<string, unknown> = {}) => ({
  Embeddings: { BaseAddress: standin.baseAddress, Model: model, Dimensions: dimensions, RequestTimeout: '00:00:05', BatchSize: 8, ...extra },
  EmbeddingBackfill: { Interval: '00:10:00', BatchSize: 10 },
});

t.test('activation, arrivals, a reindex beside the serving generation, cancellation, and a restart', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'erin', password: 'pw-erin' }] });
  t.teardown(() => dovecot.stop());
  const mail = [...generateMailbox({ seed: 15, count: COUNT + 1, profile: 'small' })];
  await writeMaildir(
    dovecot,
    'erin',
    'INBOX',
    mail.slice(0, COUNT).map((m) => ({ raw: m.raw })),
  );
  const first = await startEmbeddingStandin({ dimensions: 16 });
  t.teardown(() => first.close());
  const second = await startEmbeddingStandin({ dimensions: 24 });
  t.teardown(() => second.close());

  const dir = tempDir(t);
  const accounts = [{ id: 'erin', user: 'erin', folders: [{ Alias: 'inbox' }] }];
  let sync = await startSyncService(dir, dovecot, accounts, embeddingsConfig(first, 'model-a', 16));
  let stopped = false;
  t.teardown(() => (stopped ? undefined : sync.service.stop()));
  await sync.syncNow('erin', 120_000);
  let e = embedding(sync);

  const before = await e.status();
  t.same(before.declared, { provider: 'openai-compatible', model: 'model-a', dimensions: 16, distance: 'cosine' }, 'the declared profile is stated');
  t.equal(before.serving, null, 'nothing serves before an activation');
  t.same(before.reindex, { state: 'none' });
  t.equal(before.nextPassAt, null, 'no pass is planned while nothing is activated');
  t.equal(before.spend.usedCharacters, 0);
  t.same(await e.place(QUERY), { semanticSearch: 'inactive' }, 'a query is not placed: semantic search is inactive');

  const forecast = await e.forecast();
  t.equal(forecast.effect, 'start');
  t.ok(forecast.passages >= COUNT, 'every stored message has at least one passage to send');
  t.equal(forecast.approximateTokens, Math.ceil(forecast.characters / 4));
  t.match(forecast.forecast, /^Activating embeds \d+ passages, about \d+ characters/);
  t.equal(first.requests.length, 0, 'status, forecast and query placement sent nothing: only an activation starts the bill');

  const activated = await e.activate();
  t.equal(activated.outcome, 'started');
  const served = await eventually(
    () => e.status(),
    (s) => s.serving !== null && s.serving.emailCount === COUNT && s.serving.embeddedEmailCount === COUNT,
    'the mailbox embedded',
  );
  t.equal(served.serving?.generation, activated.generation, 'the first generation serves at once and fills');
  t.equal(served.spend.usedCharacters, sentCharacters(first), 'the spend is every character sent, counted once');
  t.ok(forecast.characters >= served.spend.usedCharacters, 'the forecast did not under-state the spend');
  t.ok(
    first.requests.every((r) => r.inputs.length <= 8),
    'each call carries at most Embeddings:BatchSize passages',
  );

  const placed = await e.place(QUERY);
  t.equal(placed.semanticSearch, 'available');
  if (placed.semanticSearch === 'available') {
    t.equal(placed.generation, activated.generation);
    t.same(
      [...placed.vector].map((x) => Math.round(x * 1e5)),
      first.vectorOf(QUERY).map((x) => Math.round(x * 1e5)),
      "the query is placed by the serving profile's model",
    );
  }

  const calls = first.requests.length;
  t.equal((await e.activate()).outcome, 'serving', 'activating the serving profile again begins nothing');
  t.equal((await e.forecast()).passages, 0, '… and its forecast sends nothing');
  t.equal(first.requests.length, calls, '… and spends nothing');

  // An arrival is embedded by the derivation writer's doorbell, long before the next sweep (10 minutes away).
  await saveMessage(dovecot, 'erin', 'INBOX', mail[COUNT]!.raw);
  await sync.syncNow('erin', 120_000);
  await eventually(
    () => e.status(),
    (s) => s.serving?.emailCount === COUNT + 1 && s.serving.embeddedEmailCount === COUNT + 1,
    'the arrival embedded',
    30_000,
  );

  const spentBeforeRestart = (await e.status()).spend.usedCharacters;
  await sync.service.stop();

  // A changed profile: the second stand-in, failing for now.
  second.setDefault({ kind: 'status', status: 503 });
  sync = await startSyncService(dir, dovecot, accounts, embeddingsConfig(second, 'model-b', 24));
  e = embedding(sync);
  const restarted = await e.status();
  t.equal(restarted.spend.usedCharacters, spentBeforeRestart, 'the spend of the period survives the restart');
  t.equal(restarted.serving?.model, 'model-a', 'the old generation still serves');
  t.equal((await e.place(QUERY)).semanticSearch, 'available', 'and still places queries with its own model, while the declaration names another');
  t.equal((await e.forecast()).effect, 'reindex');
  const reindexing = await e.activate();
  t.equal(reindexing.outcome, 'reindexing');
  const stuck = await eventually(
    () => e.status(),
    (s) => s.waitingFor === 'provider' && s.provider.state !== 'healthy',
    'the failing provider to be reported',
  );
  t.match(stuck.reindex, { state: 'building', generation: reindexing.generation, profile: { model: 'model-b' } });
  t.match(stuck.provider, { lastFailure: 'http-503' }, 'provider health names the class of failure, never its words');
  t.ok(stuck.nextPassAt !== null, 'the next attempt is planned');
  t.equal((await e.place(QUERY)).semanticSearch, 'available', 'the serving generation answers throughout the reindex');

  const cancelled = await e.cancel();
  t.same(cancelled, { cancelled: reindexing.generation, serving: activated.generation }, 'cancellation stops the reindex and keeps the serving generation');
  t.same((await e.status()).reindex, { state: 'none' });
  t.same(await e.cancel(), { cancelled: null, serving: activated.generation }, 'a cancellation with no reindex stops nothing');

  second.setDefault({ kind: 'ok' });
  const again = await e.activate();
  t.equal(again.outcome, 'reindexing');
  const promoted = await eventually(
    () => e.status(),
    (s) => s.serving?.generation === again.generation && s.serving.embeddedEmailCount === COUNT + 1,
    'the new generation to serve',
  );
  t.same(promoted.reindex, { state: 'none' });
  t.equal(promoted.serving?.model, 'model-b');
  const placedB = await e.place(QUERY);
  t.ok(placedB.semanticSearch === 'available' && placedB.vector.length === 24, 'queries are placed by the new model once it serves');

  await sync.service.stop();
  stopped = true;
  const logs = sync.logs.raw();
  for (const secret of [...sensitiveStrings(mail.map((m) => m.raw)), QUERY, ...mail.map((m) => m.subject).filter((s) => s.length >= 8)]) {
    if (logs.includes(secret)) t.fail('a log line carries mail or the query');
  }
});

t.test('a spent period makes work wait, says so, and names the rollover', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'finn', password: 'pw-finn' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(
    dovecot,
    'finn',
    'INBOX',
    [...generateMailbox({ seed: 16, count: 20, profile: 'small' })].map((m) => ({ raw: m.raw })),
  );
  const standin = await startEmbeddingStandin({ dimensions: 8 });
  t.teardown(() => standin.close());
  const sync = await startSyncService(
    tempDir(t),
    dovecot,
    [{ id: 'finn', user: 'finn', folders: [{ Alias: 'inbox' }] }],
    embeddingsConfig(standin, 'small', 8, { MaxInputCharactersPerPeriod: 1_000, Period: '01:00:00' }),
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('finn', 120_000);
  const e = embedding(sync);
  const forecast = await e.forecast();
  t.ok(forecast.periods > 1, 'the forecast says the mailbox needs more than one period');
  t.match(forecast.forecast, /over at least \d+ spend periods/);
  await e.activate();
  const waiting = await eventually(
    () => e.status(),
    (s) => s.waitingFor === 'spend',
    'work to wait for the spend',
  );
  t.ok(waiting.spend.usedCharacters <= 1_000, 'never more than the bound is sent');
  t.equal(waiting.spend.usedCharacters, sentCharacters(standin));
  t.equal(waiting.nextPassAt, waiting.spend.periodEndsAt, 'the next pass is the period rollover');
  t.ok(waiting.serving !== null && waiting.serving.embeddedEmailCount < waiting.serving.emailCount, 'coverage shows what is left');
});

/** A plain-text message whose body is `parts` paragraphs of ~1,100 characters: one passage each (actors/mime-parse/passages.ts). */
function longMessage(n: number, parts: number): string {
  const paragraph = (k: number) => `Section ${k} of letter ${n}. ${'The ledger was reconciled against the carrier statements. '.repeat(19)}`;
  const body = Array.from({ length: parts }, (_, k) => paragraph(k)).join('\r\n\r\n');
  const head = [`From: clerk${n}@example.org`, 'To: finn@example.org', `Subject: Ledger ${n}`, `Message-ID: <ledger-${n}@example.org>`];
  return `${[...head, 'Date: Mon, 2 Nov 2026 10:00:00 +0000', 'Content-Type: text/plain; charset=utf-8', '', body].join('\r\n')}\r\n`;
}

/** Which sections of which letters a stand-in was sent, as `letter:section`, in order. */
const sectionsSent = (standin: EmbeddingStandin): string[] =>
  standin.requests
    .filter((r) => r.answered === 'ok')
    .flatMap((r) => r.inputs.flatMap((text) => [...text.matchAll(/Section (\d+) of letter (\d+)\./g)].map((m) => `${m[2]}:${m[1]}`)));

t.test(
  'PassagesPerMessage: only the first passages of each message are sent; raising it sends the rest once; a reindex is complete without the others',
  async (t) => {
    const dovecot = await startDovecot({ users: [{ user: 'gale', password: 'pw-gale' }] });
    t.teardown(() => dovecot.stop());
    await writeMaildir(dovecot, 'gale', 'INBOX', [{ raw: longMessage(1, 6) }, { raw: longMessage(2, 3) }, { raw: longMessage(3, 1) }]);
    const first = await startEmbeddingStandin({ dimensions: 8 });
    t.teardown(() => first.close());
    const second = await startEmbeddingStandin({ dimensions: 12 });
    t.teardown(() => second.close());
    const dir = tempDir(t);
    const accounts = [{ id: 'gale', user: 'gale', folders: [{ Alias: 'inbox' }] }];
    const start = (standin: EmbeddingStandin, model: string, dimensions: number, perMessage: number) =>
      startSyncService(dir, dovecot, accounts, embeddingsConfig(standin, model, dimensions, { PassagesPerMessage: perMessage }));

    let sync = await start(first, 'model-a', 8, 2);
    let running = true;
    t.teardown(() => (running ? sync.service.stop() : undefined));
    await sync.syncNow('gale', 120_000);
    let e = embedding(sync);
    const bounded = await e.forecast();
    t.equal(bounded.passages, 2 + 2 + 1, 'the forecast counts the first two passages of each message');
    t.match(bounded.forecast, /^Activating embeds 5 passages \(at most the first 2 of each message\), about \d+ characters/, 'and its sentence says so');
    await e.activate();
    await eventually(
      () => e.status(),
      (s) => s.serving?.embeddedEmailCount === 3,
      'every message embedded',
    );
    t.same(sectionsSent(first).sort(), ['1:0', '1:1', '2:0', '2:1', '3:0'], 'of each message its first two passages, once each');
    await sync.service.stop();
    running = false;

    sync = await start(first, 'model-a', 8, 4);
    running = true;
    e = embedding(sync);
    t.equal((await e.forecast()).effect, 'serving', 'a changed bound is not a new profile: the generation keeps serving');
    await eventually(
      async () => sectionsSent(first).length,
      (n) => n >= 8,
      'the passages the raised bound adds',
    );
    await new Promise((r) => setTimeout(r, 500));
    t.same(
      sectionsSent(first).sort(),
      ['1:0', '1:1', '1:2', '1:3', '2:0', '2:1', '2:2', '3:0'],
      'raising it to four sends the passages it adds, and none twice',
    );
    await sync.service.stop();
    running = false;

    sync = await start(second, 'model-b', 12, 1);
    running = true;
    e = embedding(sync);
    t.equal((await e.forecast()).passages, 3, "a reindex's forecast counts one passage a message");
    const reindexing = await e.activate();
    t.equal(reindexing.outcome, 'reindexing');
    await eventually(
      () => e.status(),
      (s) => s.serving?.generation === reindexing.generation,
      'the new generation promoted',
    );
    t.same(sectionsSent(second).sort(), ['1:0', '2:0', '3:0'], 'the new generation is complete with the first passage of each message');
  },
);
