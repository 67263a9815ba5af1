/**
 * Dead letters end to end, through a service started for real (a private
 * Dovecot behind two accounts, `Storage:BusyTimeout` one second) and a
 * real fault: after a re-derivation run of each account is requested, this
 * test opens its own connection to the service's database and holds the
 * write lock (`BEGIN IMMEDIATE`), so every segment fails with the database
 * busy. It proves:
 * - each failure is retried with backoff and the fifth dead-letters the
 *   job; while the lock is held nothing can be written, so the test
 *   releases it once the service has logged each job's fifth failure, and
 *   the dead letters land then; reads (the listing) go on under the lock;
 * - the listing: attemptCount 5, failureClassification `database-busy`, a
 *   constant failureReason; newest first; the account and type filters; a
 *   walk of one per page visits each dead letter once; the run reads
 *   carriage `stopped` and keeps its position while nothing carries it;
 * - retry: Accepted, the run goes on to the end with counts covering every
 *   message held; again: JobNotDeadLettered; an unknown job: JobUnknown;
 * - drop: Accepted, the job leaves the listing but keeps its row, the run
 *   ends, and a new request of the scope starts a new run that completes;
 * - the 403 problem document on each route to a credential lacking its
 *   permission; the 400s (pageSize, unknown type, unconfigured account,
 *   a cursor under other filters, a body without a job) and the 413;
 * - no subject or address of the mail in any log line.
 */
import { randomUUID } from 'node:crypto';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { adminCall, adminEndpointSection, query, type AdminAnswer } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { readMirror } from '../../helpers/mirror.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const KEY_OPERATOR = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READER = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_NOTHING = `mc_${randomUUID().replaceAll('-', '')}`;

// Several segments of 200 each, so the lock is in place long before either run could end.
const COUNTS = { pat: 1_000, quinn: 450 } as const;

type DeadLetter = {
  job: string;
  type: string;
  account: string;
  attemptCount: number;
  failureClassification: string;
  failureReason: string;
  enqueuedAt: string;
  deadLetteredAt: string;
};
type Run = { isOutstanding: boolean; rederivedEmailCount: number; unreadableEmailCount: number; missingContentEmailCount: number; endedAt: string | null };

/** Messages of the account held with raw MIME (what a re-derivation re-reads). */
function heldCount(database: string, account: string): number {
  const db = new Libsql(database, { readonly: true });
  try {
    return Number(
      (db.prepare("SELECT count(*) AS n FROM messages WHERE account_id = ? AND state IN ('stored', 'unreadable')").get([account]) as { n: number }).n,
    );
  } finally {
    db.close();
  }
}

function jobRow(database: string, job: string): { state: string; dropped_at: number | null } {
  const db = new Libsql(database, { readonly: true });
  try {
    return db.prepare('SELECT state, dropped_at FROM jobs WHERE id = ?').get([Number(job.slice(1))]) as { state: string; dropped_at: number | null };
  } finally {
    db.close();
  }
}

/** Resolves with the first reading `ok` accepts; bounded. */
async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function problemOf(t: Test, answer: AdminAnswer, status: number, what: string): Record<string, unknown> {
  t.equal(answer.status, status, what);
  t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
  return answer.json();
}

t.test('dead letters: a real fault, the listing, retry and drop', async (t) => {
  const dovecot = await startDovecot({
    users: [
      { user: 'pat', password: 'pw-pat' },
      { user: 'quinn', password: 'pw-quinn' },
    ],
  });
  t.teardown(() => dovecot.stop());
  const mail = {
    pat: [...generateMailbox({ seed: 21, count: COUNTS.pat, profile: 'small' })],
    quinn: [...generateMailbox({ seed: 22, count: COUNTS.quinn, profile: 'small' })],
  };
  await writeMaildir(dovecot, 'pat', 'INBOX', mail.pat);
  await writeMaildir(dovecot, 'quinn', 'INBOX', mail.quinn);

  const dir = tempDir(t);
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      { id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] },
      { id: 'quinn', user: 'quinn', folders: [{ Alias: 'inbox' }] },
    ],
    {
      Storage: { BusyTimeout: '00:00:01' },
      AdminEndpoint: adminEndpointSection(dir, 0, { operator: KEY_OPERATOR, reader: KEY_READER, nothing: KEY_NOTHING }, 5_000),
    },
  );
  t.teardown(() => sync.service.stop());
  const api = `http://127.0.0.1:${sync.service.admin!.port}/api/admin`;
  const operator = (path: string, options: { method?: 'GET' | 'POST'; json?: unknown; body?: string } = {}) =>
    adminCall(`${api}${path}`, { apiKey: KEY_OPERATOR, ...options });
  const deadLetters = async (params: Record<string, string | number | undefined> = {}): Promise<{ jobs: DeadLetter[]; nextCursor?: string }> => {
    const answer = await operator(`/jobs/dead-letters${query(params)}`);
    if (answer.status !== 200) throw new Error(`dead-letter listing answered ${answer.status}`);
    return answer.json();
  };
  const runOf = async (account: string): Promise<{ carriage: string | null; run: Run }> => (await operator(`/mailbox/rederivation?account=${account}`)).json();
  const decide = async (decision: 'retry' | 'drop', job: string): Promise<unknown> =>
    (await operator(`/jobs/dead-letters/${decision}`, { json: { job } })).json();

  await sync.syncNow('pat', 120_000);
  await sync.syncNow('quinn', 120_000);
  t.same([readMirror(sync.database, 'pat', 'inbox').length, readMirror(sync.database, 'quinn', 'inbox').length], [COUNTS.pat, COUNTS.quinn]);
  const held = { pat: heldCount(sync.database, 'pat'), quinn: heldCount(sync.database, 'quinn') };

  await t.test('a run of each account dies of the database held by another process', async (t) => {
    for (const account of ['pat', 'quinn']) {
      const started = await operator('/mailbox/rederivation', { json: { account } });
      t.match(started.json(), { started: true, carriage: 'carried', run: { isOutstanding: true } }, `${account}: run started`);
    }
    const holder = new Libsql(sync.database, { timeout: 10_000 });
    holder.exec('BEGIN IMMEDIATE');
    t.teardown(() => {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    });
    t.same((await deadLetters()).jobs, [], 'the listing reads while the lock is held');

    const failed = (account: string, attempt: number) => sync.logs.events('job.attempt-failed').some((l) => l.account === account && l.attempt === attempt);
    await until(() => failed('pat', 5) && failed('quinn', 5), 150_000, 'the fifth failed attempt of both jobs');
    const lines = sync.logs.events('job.attempt-failed');
    t.ok(
      lines.every((l) => l.classification === 'database-busy' && /^SQLITE_BUSY/.test(String(l.code))),
      'every attempt failed on the busy database',
    );
    t.same(
      lines.filter((l) => l.account === 'pat').map((l) => l.attempt),
      [1, 2, 3, 4, 5],
      'five attempts, then no more',
    );
    t.same(
      lines.filter((l) => l.account === 'pat' && Number(l.attempt) < 5).map((l) => l.retryInMs),
      [1_000, 2_000, 4_000, 8_000],
      'backing off 1 s, doubling',
    );
    // Writing the dead letter is a write too: it lands once the other process lets go.
    holder.exec('ROLLBACK');
    const listed = await eventually(deadLetters, (page) => page.jobs.length === 2, 90_000, 'both dead letters');
    t.same(listed.jobs.map((j) => j.account).sort(), ['pat', 'quinn']);
    for (const job of listed.jobs) {
      t.match(job, { job: /^j\d+$/, type: 'rederivation', attemptCount: 5, failureClassification: 'database-busy', failureReason: /Storage:BusyTimeout/ });
      t.ok(Number.isFinite(Date.parse(job.enqueuedAt)) && Date.parse(job.deadLetteredAt) >= Date.parse(job.enqueuedAt));
    }
    const order = listed.jobs.map((j) => [Date.parse(j.deadLetteredAt), Number(j.job.slice(1))] as const);
    t.ok(order[0]![0] > order[1]![0] || (order[0]![0] === order[1]![0] && order[0]![1] > order[1]![1]), 'newest first');
    // The line follows the dead letter's commit, through the daemon's output pipe: it may arrive after the listing shows it.
    await until(() => sync.logs.events('job.dead-lettered').length >= 2, 10_000, 'both dead letters logged');
    t.equal(sync.logs.events('job.dead-lettered').length, 2);
  });

  const jobs = Object.fromEntries((await deadLetters()).jobs.map((j) => [j.account, j.job])) as Record<'pat' | 'quinn', string>;

  await t.test('a stopped run keeps its position while nothing carries it', async (t) => {
    const before = await runOf('pat');
    t.match(before, { carriage: 'stopped', run: { isOutstanding: true, endedAt: null } });
    t.ok(before.run.rederivedEmailCount < held.pat, `stopped part way (${before.run.rederivedEmailCount} of ${held.pat})`);
    await new Promise((r) => setTimeout(r, 3_000));
    t.same(await runOf('pat'), before, 'nothing moved it');
    t.match(
      (await operator('/mailbox/rederivation', { json: { account: 'pat' } })).json(),
      { started: false, carriage: 'stopped' },
      'asking again returns the stopped run',
    );
  });

  await t.test('filters, pages and cursors', async (t) => {
    t.same(
      (await deadLetters({ account: 'quinn' })).jobs.map((j) => j.job),
      [jobs.quinn],
    );
    t.equal((await deadLetters({ type: 'rederivation' })).jobs.length, 2);
    const walked: string[] = [];
    let cursor: string | undefined;
    let first: string | undefined;
    for (let page = 0; page < 5; page++) {
      const answer = await deadLetters({ pageSize: 1, cursor });
      t.ok(answer.jobs.length <= 1);
      walked.push(...answer.jobs.map((j) => j.job));
      first ??= answer.nextCursor;
      cursor = answer.nextCursor;
      if (cursor === undefined) break;
    }
    t.same(
      walked,
      (await deadLetters()).jobs.map((j) => j.job),
      'a walk of one per page visits each dead letter once, in order',
    );

    const cases: Array<[Record<string, string | number | undefined>, RegExp]> = [
      [{ pageSize: 0 }, /^Send pageSize as a whole number from 1 to 200\.$/],
      [{ pageSize: 201 }, /^Send pageSize as a whole number from 1 to 200\.$/],
      [{ type: 'rule-run' }, /^Send type as one of the job types this build has \(rederivation, mailbox-change\), or leave it out\.$/],
      [{ account: 'nobody' }, /^The deployment configures no mail account named 'nobody'; name one of the configured Accounts:Id values\.$/],
      [{ account: 'pat', cursor: first }, /issued under other filters/],
      [{ cursor: 'made-up' }, /not issued by this deployment/],
      [{ state: 'dead' }, /^Leave out the query parameter state/],
    ];
    for (const [params, detail] of cases) {
      const what = `GET dead-letters ${JSON.stringify(params)}`;
      const problem = problemOf(t, await operator(`/jobs/dead-letters${query(params)}`), 400, what);
      t.same(Object.keys(problem).sort(), ['detail', 'status', 'title'], what);
      t.match(problem.detail, detail, what);
    }
    t.equal((await deadLetters({ pageSize: 2, cursor: first })).jobs.length, 1, 'only pageSize may change along a walk');
  });

  await t.test('403 to a credential lacking the route permission; 400 and 413 of the bodies', async (t) => {
    const routes = [
      { method: 'GET' as const, path: '/jobs/dead-letters', permission: 'service.admin.read', keys: [KEY_NOTHING] },
      { method: 'POST' as const, path: '/jobs/dead-letters/retry', permission: 'service.admin.operate', keys: [KEY_NOTHING, KEY_READER] },
      { method: 'POST' as const, path: '/jobs/dead-letters/drop', permission: 'service.admin.operate', keys: [KEY_NOTHING, KEY_READER] },
    ];
    const refusedBefore = sync.logs.events('auth.refused').length;
    for (const route of routes) {
      for (const apiKey of route.keys) {
        const answer = await adminCall(`${api}${route.path}`, {
          method: route.method,
          apiKey,
          ...(route.method === 'POST' ? { json: { job: jobs.pat } } : {}),
        });
        t.same(problemOf(t, answer, 403, `${route.method} ${route.path}`), {
          status: 403,
          detail: `The credential does not hold the permission ${route.permission}.`,
          permission: route.permission,
        });
      }
    }
    t.equal(sync.logs.events('auth.refused').length - refusedBefore, 5, 'each refusal counted once');
    for (const path of ['/jobs/dead-letters/retry', '/jobs/dead-letters/drop']) {
      for (const body of [{}, { job: 42 }, { job: 'job 42' }, { job: '' }]) {
        const problem = problemOf(t, await operator(path, { json: body }), 400, `${path} ${JSON.stringify(body)}`);
        t.equal(problem.detail, 'Name the job in job as the dead-letter listing gives it: j followed by digits, such as j42.');
      }
      t.match(problemOf(t, await operator(path, { json: { job: jobs.pat, force: true } }), 400, `${path} extra member`).detail, /^Leave out the member force/);
      t.match(problemOf(t, await operator(path, { json: { job: jobs.pat, pad: 'x'.repeat(4 * 1024) } }), 413, `${path} past 4 KB`), {
        status: 413,
        detail: 'Send a body of at most 4096 bytes.',
      });
    }
    t.equal((await deadLetters()).jobs.length, 2, 'no refused request changed anything');
  });

  await t.test('retry: the run goes on from its position to the end', async (t) => {
    t.same(await decide('retry', 'j999999'), { job: 'j999999', outcome: 'JobUnknown' });
    t.same(await decide('drop', 'j999999'), { job: 'j999999', outcome: 'JobUnknown' });
    t.same(await decide('retry', jobs.pat), { job: jobs.pat, outcome: 'Accepted' });
    t.same(
      (await deadLetters()).jobs.map((j) => j.job),
      [jobs.quinn],
      'no longer a dead letter',
    );
    const ended = await eventually(
      () => runOf('pat'),
      (r) => !r.run.isOutstanding,
      120_000,
      "pat's run to end",
    );
    t.match(ended, { carriage: 'carried', run: { isOutstanding: false, missingContentEmailCount: 0 } });
    t.equal(ended.run.rederivedEmailCount + ended.run.unreadableEmailCount + ended.run.missingContentEmailCount, held.pat, 'counts cover every message held');
    t.same(await decide('retry', jobs.pat), { job: jobs.pat, outcome: 'JobNotDeadLettered' }, 'a second retry');
    t.same(await decide('drop', jobs.pat), { job: jobs.pat, outcome: 'JobNotDeadLettered' }, 'a finished job is not dropped');
    t.equal(jobRow(sync.database, jobs.pat).state, 'done');
  });

  await t.test('drop: the job leaves the listing, keeps its row, and its run ends', async (t) => {
    t.same(await decide('drop', jobs.quinn), { job: jobs.quinn, outcome: 'Accepted' });
    t.same((await deadLetters()).jobs, []);
    t.match(jobRow(sync.database, jobs.quinn), { state: 'dropped', dropped_at: Number });
    t.match(await runOf('quinn'), { carriage: 'stopped', run: { isOutstanding: false, endedAt: String } });
    t.same(await decide('retry', jobs.quinn), { job: jobs.quinn, outcome: 'JobNotDeadLettered' }, 'a dropped job never runs');
    t.match(
      (await operator('/mailbox/rederivation', { json: { account: 'quinn' } })).json(),
      { started: true, carriage: 'carried' },
      'a new request starts a new run',
    );
    const ended = await eventually(
      () => runOf('quinn'),
      (r) => !r.run.isOutstanding,
      120_000,
      "quinn's new run to end",
    );
    t.equal(ended.run.rederivedEmailCount + ended.run.unreadableEmailCount + ended.run.missingContentEmailCount, held.quinn);
  });

  const events = new Set(sync.logs.lines.filter((l) => String(l.event).startsWith('job.')).map((l) => l.event));
  t.same([...events].sort(), [
    'job.attempt-failed',
    'job.completed',
    'job.dead-lettered',
    'job.dropped',
    'job.enqueued',
    'job.retried',
    'job.started',
    'job.write-deferred',
  ]);
  const logged = sync.logs.raw();
  const leaked = sensitiveStrings([...mail.pat, ...mail.quinn].map((m) => m.raw)).filter((s) => logged.includes(s));
  t.same(leaked, [], 'no subject or address in any log line');
});
