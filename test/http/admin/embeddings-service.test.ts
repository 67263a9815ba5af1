/**
 * The embedding routes answered by the embedding actor of a service started
 * for real, mirroring a private Dovecot, with the OpenAI-compatible
 * stand-in as the provider (`Embeddings: { BaseAddress, Model, Dimensions }`):
 * - before activation: every status line (declared profile, no serving
 *   generation, no reindex, no next pass, provider, spend of the period's
 *   maximum), and a forecast (`start`) that sent nothing to the provider;
 * - a read-only credential is refused the activation (403) and a body with
 *   members is refused (400): nothing begins, nothing is sent;
 * - activation with no body starts generation 1, which serves at once and
 *   ends covering every stored email, having sent the provider as many
 *   passages as the forecast said; activating again spends nothing;
 * - cancellation with no reindex stops nothing and keeps the serving one;
 * - after a restart declaring another profile the forecast is `reindex`;
 *   activating builds generation 2 beside the serving one while the
 *   provider fails (its health and instant shown, work waiting for it);
 *   cancelling stops generation 2 and generation 1 still serves;
 * - with no profile declared the forecast is `not-declared` and the
 *   activation a 400 naming the settings to write;
 * - no subject or address of the mail reaches an answer or a log line.
 */
import t from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin, type EmbeddingStandin } from '../../harness/embedding-standin.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { adminCall, type AdminAnswer } from '../../helpers/admin-client.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startCliService, tempDir, type CliService } from '../../cli/harness.ts';

t.setTimeout(300_000);

const MESSAGES = 40;

type Profile = { provider: string; model: string; dimensions: number; distance: string };
type Status = {
  declared: Profile | null;
  serving: (Profile & { generation: number; servingSince: string; embeddedEmailCount: number; emailCount: number; progress: unknown }) | null;
  reindex: { state: 'none' } | { state: 'building'; generation: number; profile: Profile; startedAt: string; embeddedEmailCount: number; emailCount: number };
  nextPassAt: string | null;
  waitingFor: 'spend' | 'provider' | null;
  provider: { state: string; since: string | null; lastFailure: string | null };
  spend: { usedCharacters: number; maxCharacters: number; periodStartedAt: string; periodEndsAt: string };
};
type Forecast = {
  declared: Profile | null;
  effect: string;
  passages: number;
  characters: number;
  approximateTokens: number;
  periods: number;
  forecast: string;
};
type Activation = { outcome: string; generation: number; forecast: Forecast };

function embeddingsSection(standin: EmbeddingStandin, model: string, dimensions: number): Record<string, unknown> {
  return { Embeddings: { BaseAddress: standin.baseAddress, Model: model, Dimensions: dimensions } };
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, limitMs = 90_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${limitMs} ms; last ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

t.test('embedding status, forecast, activation and cancellation against the actor', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const mail = [...generateMailbox({ seed: 21, count: MESSAGES, profile: 'small' })];
  await writeMaildir(dovecot, 'pat', 'INBOX', mail);
  const sensitive = sensitiveStrings(mail.map((m) => m.raw));
  const standin = await startEmbeddingStandin({ dimensions: 64 });
  t.teardown(() => standin.close());
  const dir = tempDir(t);
  const accounts = [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }];
  const first = await startCliService(t, { dir, dovecot, synchronization: true, accounts, sections: embeddingsSection(standin, 'standin-embed', 64) });

  const answers: AdminAnswer[] = [];
  const call = async (svc: CliService, key: keyof CliService['keys'], path: string, options: { method?: 'GET' | 'POST'; json?: unknown } = {}) => {
    const answer = await adminCall(`${svc.admin}/api/admin${path}`, { apiKey: svc.keys[key], ...options });
    answers.push(answer);
    return answer;
  };
  const ok = async <T>(answer: Promise<AdminAnswer>): Promise<T> => {
    const a = await answer;
    // Thrown, not asserted: a poll would otherwise add an assertion per round.
    if (a.status !== 200) throw new Error(`answered ${a.status}: ${a.body}`);
    return a.json() as T;
  };
  const status = (svc: CliService) => ok<Status>(call(svc, 'reader', '/embeddings'));
  const forecast = (svc: CliService) => ok<Forecast>(call(svc, 'reader', '/embeddings/activation'));

  // Wait until the mail is mirrored and indexed: passages exist to forecast.
  await until(
    'mirrored and indexed',
    () =>
      ok<{ accounts: Array<{ folders: Array<{ lastSeenUid: number | null; notYetIndexedEmailCount?: number }> }> }>(
        call(first, 'reader', '/mailbox/synchronization'),
      ),
    (s) => s.accounts[0]?.folders[0]?.lastSeenUid === MESSAGES && s.accounts[0]?.folders[0]?.notYetIndexedEmailCount === 0,
  );

  const declared = { provider: 'openai-compatible', model: 'standin-embed', dimensions: 64, distance: 'cosine' };
  await t.test('before activation: the status lines, and a forecast that sends nothing', async (t) => {
    const before = await status(first);
    t.same(before.declared, declared, 'the declared profile');
    t.equal(before.serving, null, 'no serving generation: semantic search inactive');
    t.same(before.reindex, { state: 'none' });
    t.equal(before.nextPassAt, null, 'no next pass with nothing activated');
    t.equal(before.waitingFor, null);
    t.equal(before.provider.state, 'healthy');
    t.equal(before.spend.usedCharacters, 0);
    t.equal(before.spend.maxCharacters, 10_000_000, 'Embeddings:MaxInputCharactersPerPeriod');
    t.ok(Date.parse(before.spend.periodEndsAt) > Date.parse(before.spend.periodStartedAt), 'the period rolls over after it started');

    const estimate = await forecast(first);
    t.equal(estimate.effect, 'start');
    t.same(estimate.declared, declared);
    t.ok(estimate.passages >= MESSAGES, `every stored email has a passage to send (${estimate.passages})`);
    t.ok(estimate.characters > estimate.passages);
    t.equal(estimate.approximateTokens, Math.ceil(estimate.characters / 4), 'characters / 4, rounded up');
    t.equal(estimate.periods, 1);
    t.match(estimate.forecast, new RegExp(`${estimate.passages} passages`));
    t.equal(standin.requests.length, 0, 'the forecast sent nothing to the provider');
  });

  await t.test('refusals begin nothing', async (t) => {
    const readOnly = await call(first, 'reader', '/embeddings/activation', { method: 'POST', json: {} });
    t.equal(readOnly.status, 403);
    t.equal(readOnly.json().permission, 'service.admin.spend');
    const members = await call(first, 'operator', '/embeddings/activation', { method: 'POST', json: { model: 'other' } });
    t.equal(members.status, 400);
    t.match(members.json().detail, /Leave out the member model/);
    // Give an activation that wrongly went through the time to send something.
    await new Promise((r) => setTimeout(r, 1_000));
    t.equal((await status(first)).serving, null, 'nothing was activated');
    t.equal(standin.requests.length, 0, 'nothing was sent');
  });

  let planned = 0;
  await t.test('activation with no body starts generation 1, which covers every stored email', async (t) => {
    const expected = await forecast(first);
    planned = expected.passages;
    const started = await ok<Activation>(call(first, 'operator', '/embeddings/activation', { method: 'POST' }));
    t.equal(started.outcome, 'started');
    t.equal(started.generation, 1);
    t.equal(started.forecast.effect, 'start');
    t.equal(started.forecast.passages, planned);
    const serving = (await status(first)).serving;
    t.equal(serving?.generation, 1, 'the first generation serves at once');
    const covered = await until(
      'every stored email embedded',
      () => status(first),
      (s) => s.serving !== null && s.serving.emailCount === MESSAGES && s.serving.embeddedEmailCount === MESSAGES,
    );
    const { progress, ...coverage } = covered.serving!;
    t.same(
      { ...coverage, servingSince: 'instant' },
      { ...declared, generation: 1, servingSince: 'instant', embeddedEmailCount: MESSAGES, emailCount: MESSAGES },
    );
    t.match(progress, { completedEmailCount: MESSAGES, totalEmailCount: MESSAGES, secondsLeft: 0 }, 'the progress: all of it, nothing left');
    const sent = standin.requests.flatMap((r) => r.inputs);
    t.equal(sent.length, planned, 'the provider was sent as many passages as the forecast said');
    t.ok(
      standin.requests.every((r) => r.model === 'standin-embed'),
      'the declared model was asked',
    );
    t.ok(covered.spend.usedCharacters > 0, 'the spend line counts what was sent');
    t.equal(covered.provider.state, 'healthy');
    t.ok(covered.provider.since === null || !Number.isNaN(Date.parse(covered.provider.since)));
  });

  await t.test('activating the serving profile again spends nothing; cancelling with no reindex stops nothing', async (t) => {
    const calls = standin.requests.length;
    const again = await forecast(first);
    t.equal(again.effect, 'serving');
    t.equal(again.passages, 0);
    const activation = await ok<Activation>(call(first, 'operator', '/embeddings/activation', { method: 'POST', json: {} }));
    t.same([activation.outcome, activation.generation], ['serving', 1]);
    t.equal((await call(first, 'reader', '/embeddings/reindex/cancellation', { method: 'POST', json: {} })).status, 403, 'cancellation needs operate');
    t.same(await ok(call(first, 'operator', '/embeddings/reindex/cancellation', { method: 'POST' })), { cancelled: null, serving: 1 });
    await new Promise((r) => setTimeout(r, 500));
    t.equal(standin.requests.length, calls, 'nothing more was sent');
  });

  await first.service.stop();

  await t.test('another declared profile: a reindex beside the serving generation, then cancelled', async (t) => {
    const failing = await startEmbeddingStandin({ dimensions: 32 });
    t.teardown(() => failing.close());
    failing.setDefault({ kind: 'status', status: 503 });
    const second = await startCliService(t, { dir, dovecot, keys: first.keys, accounts, sections: embeddingsSection(failing, 'standin-small', 32) });
    const reindex = await forecast(second);
    t.equal(reindex.effect, 'reindex');
    t.equal(reindex.declared?.model, 'standin-small');
    t.ok(reindex.passages >= MESSAGES);
    t.match(reindex.forecast, /generation 1 keeps answering/);

    const begun = await ok<Activation>(call(second, 'operator', '/embeddings/activation', { method: 'POST', json: {} }));
    t.same([begun.outcome, begun.generation], ['reindexing', 2]);
    const building = await until(
      'the provider failing shows',
      () => status(second),
      (s) => s.waitingFor === 'provider' && s.provider.state !== 'healthy',
    );
    t.equal(building.serving?.generation, 1, 'generation 1 still serves');
    t.equal(building.serving?.model, 'standin-embed');
    t.equal(building.reindex.state, 'building');
    if (building.reindex.state === 'building') {
      t.equal(building.reindex.generation, 2);
      t.equal(building.reindex.profile.model, 'standin-small');
      t.ok(building.reindex.embeddedEmailCount < MESSAGES, 'the failing provider embedded nothing of it');
    }
    t.ok(building.provider.since !== null && !Number.isNaN(Date.parse(building.provider.since)), 'the provider health carries its instant');
    t.ok(failing.requests.length > 0, 'the reindex asked the provider');

    const still = await ok<Activation>(call(second, 'operator', '/embeddings/activation', { method: 'POST' }));
    t.same([still.outcome, still.generation], ['building', 2], 'activating what is being built begins nothing');

    t.same(await ok(call(second, 'operator', '/embeddings/reindex/cancellation', { method: 'POST', json: {} })), { cancelled: 2, serving: 1 });
    const after = await status(second);
    t.same(after.reindex, { state: 'none' });
    t.equal(after.serving?.generation, 1, 'the serving generation stays');
    t.equal(after.serving?.embeddedEmailCount, MESSAGES);
    t.equal((await forecast(second)).effect, 'reindex', 'the declared profile can be activated again');

    const raw = second.logs.raw() + first.logs.raw();
    t.same(
      sensitive.filter((s) => raw.includes(s)),
      [],
      'no subject or address in any log line',
    );
  });

  await t.test('nothing declared: the forecast says so and the activation is a 400 naming the settings', async (t) => {
    const bare = await startCliService(t);
    const s = await status(bare);
    t.equal(s.declared, null);
    t.equal(s.serving, null);
    t.equal(s.provider.state, 'not-declared');
    const f = await forecast(bare);
    t.same([f.effect, f.passages, f.characters], ['not-declared', 0, 0]);
    const refused = await call(bare, 'operator', '/embeddings/activation', { method: 'POST', json: {} });
    t.equal(refused.status, 400);
    t.equal(refused.type, 'application/problem+json');
    t.match(refused.json().detail, /Embeddings:BaseAddress, Model and Dimensions/);
    t.same(bare.logs.events('http.failed'), [], 'answered, not failed');
  });

  t.same(
    sensitive.filter((s) => answers.some((a) => a.body.includes(s))),
    [],
    'no subject or address in any answer',
  );
});
