/**
 * The outbox routes through a service started for real (two accounts whose
 * mail servers are never reached; synchronization off), with sends placed
 * in its database by the test (test/helpers/outbox.ts): everything here
 * is answered before the outbox actor is asked, so it holds with or without
 * one running. It proves:
 * - the summary: one count per stage, all five present, over the configured
 *   accounts only (a send of a withdrawn account is not counted);
 * - the listing: newest first; exactly the listing fields; no recipient,
 *   no subject; the account and stage filters; a walk of three per page
 *   visits each send once; a cursor is bound to account and stage (another
 *   account, another stage, or a filter dropped is 400; only pageSize may
 *   change); pageSize 1 to 200, default 50; a stage no send can stand at is
 *   400 naming the five; an unconfigured account is 400;
 * - the detail: every recipient with its header, state, reply code and
 *   time; a malformed id, an unknown one and a send of a withdrawn account
 *   are the same 404 problem document; a path under it is an empty 404;
 * - cancellation and requeue: a body naming no send is 400 (no member, not
 *   text, malformed; a member a route does not take, refusalRestated on a
 *   cancellation, is 400 too); a well-formed unknown id, and a send of a
 *   withdrawn account, is 200 `RecordUnknown`; past 4 KB is 413;
 * - 403 (exactly status, detail, permission) on each route to a credential
 *   lacking its permission, each counted once, and before any 404 of the
 *   detail;
 * - no recipient or subject in any log line.
 */
import t, { type Test } from 'tap';
import { startCliService } from '../../cli/harness.ts';
import { adminCall, query, type AdminAnswer } from '../../helpers/admin-client.ts';
import { openServiceStore, seedSend, withdrawnAccount, type SeededSend } from '../../helpers/outbox.ts';

t.setTimeout(240_000);

type Entry = { outgoingEmail: string; recordedAt: string; account: string; stage: string; attemptCount: number; lastFailure: unknown; dueAt: string | null };
type Listing = { outgoingEmails: Entry[]; nextCursor?: string };

const ENTRY_KEYS = ['account', 'attemptCount', 'dueAt', 'lastFailure', 'outgoingEmail', 'recordedAt', 'stage'];
const STAGE_SENTENCE = 'Send stage as one of the five stages a send can stand at (Recorded, TransmissionBegun, Sent, Refused, Cancelled), or leave it out.';
const NOT_FOUND =
  'The deployment holds no send of a configured account by that identifier; name one as the outbox listing gives it: o followed by digits, such as o12.';
const SHAPE = 'Name the send in outgoingEmail as the outbox listing gives it: o followed by digits, such as o12.';

function problemOf(t: Test, answer: AdminAnswer, status: number, what: string): Record<string, unknown> {
  t.equal(answer.status, status, what);
  t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
  return answer.json();
}

t.test('outbox routes', async (t) => {
  const svc = await startCliService(t, {
    accounts: [
      { id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] },
      { id: 'quinn', user: 'quinn', folders: [{ Alias: 'inbox' }] },
    ],
  });
  const api = `${svc.admin}/api/admin`;
  const as =
    (apiKey: string) =>
    (path: string, options: { method?: 'GET' | 'POST'; json?: unknown; body?: string } = {}) =>
      adminCall(`${api}${path}`, { apiKey, ...options });
  const operator = as(svc.keys.operator);
  const listing = async (params: Record<string, string | number | undefined> = {}): Promise<Listing> => {
    const answer = await operator(`/outbox${query(params)}`);
    if (answer.status !== 200) throw new Error(`listing answered ${answer.status}: ${answer.body}`);
    return answer.json();
  };

  // Placed in order, so ids rise with the list.
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);
  withdrawnAccount(db, 'olga');
  const seeded: SeededSend[] = [
    seedSend(db, 'pat', 'Recorded'),
    seedSend(db, 'quinn', 'Recorded', { failedOnce: true }),
    seedSend(db, 'pat', 'TransmissionBegun'),
    seedSend(db, 'quinn', 'Sent'),
    seedSend(db, 'pat', 'Refused'),
    seedSend(db, 'pat', 'Cancelled'),
    seedSend(db, 'quinn', 'Recorded'),
  ];
  const withdrawn = seedSend(db, 'olga', 'Recorded');
  const newestFirst = seeded.map((s) => s.outgoingEmail).reverse();
  const secrets = [...seeded, withdrawn].flatMap((s) => [s.subject, ...s.recipients]);
  const leaked = (text: string): string[] => secrets.filter((s) => text.includes(s) || text.includes('merger'));

  await t.test('summary: one count per stage over the configured accounts', async (t) => {
    const answer = await operator('/outbox/summary');
    t.equal(answer.status, 200);
    t.same(answer.json(), { stageCounts: { Recorded: 3, TransmissionBegun: 1, Sent: 1, Refused: 1, Cancelled: 1 } }, "olga's send is not counted");
    t.same(leaked(answer.body), []);
    t.match(problemOf(t, await operator('/outbox/summary?account=pat'), 400, 'summary with a query').detail, /^Leave out the query string/);
  });

  await t.test('listing: rows, filters, pages and cursors', async (t) => {
    const all = await listing();
    t.same(
      all.outgoingEmails.map((e) => e.outgoingEmail),
      newestFirst,
      "newest first; olga's send is not listed",
    );
    t.equal(all.nextCursor, undefined, 'nothing follows');
    for (const entry of all.outgoingEmails) t.same(Object.keys(entry).sort(), ENTRY_KEYS, `${entry.outgoingEmail}: the listing fields only`);
    t.same(leaked(JSON.stringify(all)), [], 'no recipient, no subject');
    const byId = Object.fromEntries(all.outgoingEmails.map((e) => [e.outgoingEmail, e]));
    t.match(byId[seeded[1]!.outgoingEmail], {
      account: 'quinn',
      stage: 'Recorded',
      attemptCount: 1,
      lastFailure: { code: 'server-busy', replyCode: 451 },
      dueAt: String,
    });
    t.ok(Date.parse(byId[seeded[1]!.outgoingEmail]!.dueAt!) > Date.now(), 'due later');
    t.match(byId[seeded[0]!.outgoingEmail], { account: 'pat', stage: 'Recorded', attemptCount: 0, lastFailure: null, dueAt: String });
    t.match(byId[seeded[2]!.outgoingEmail], { stage: 'TransmissionBegun', dueAt: null });
    t.match(byId[seeded[3]!.outgoingEmail], { stage: 'Sent', attemptCount: 1, lastFailure: null, dueAt: null });
    t.match(byId[seeded[4]!.outgoingEmail], { stage: 'Refused', lastFailure: { code: 'recipient-refused', replyCode: 550 }, dueAt: null });
    t.match(byId[seeded[5]!.outgoingEmail], { stage: 'Cancelled', dueAt: null });
    for (const entry of all.outgoingEmails) t.ok(Math.abs(Date.parse(entry.recordedAt) - Date.now()) < 120_000, 'recordedAt is an instant');

    t.same(
      (await listing({ account: 'quinn' })).outgoingEmails.map((e) => e.outgoingEmail),
      [seeded[6], seeded[3], seeded[1]].map((s) => s!.outgoingEmail),
    );
    t.same(
      (await listing({ stage: 'Recorded' })).outgoingEmails.map((e) => e.outgoingEmail),
      [seeded[6], seeded[1], seeded[0]].map((s) => s!.outgoingEmail),
    );
    t.same(
      (await listing({ account: 'pat', stage: 'Recorded' })).outgoingEmails.map((e) => e.outgoingEmail),
      [seeded[0]!.outgoingEmail],
    );
    t.same(await listing({ stage: 'TransmissionBegun', account: 'quinn' }), { outgoingEmails: [] });

    const walked: string[] = [];
    let cursor: string | undefined;
    let first: string | undefined;
    for (let page = 0; page < 10; page++) {
      const answer = await listing({ pageSize: 3, cursor });
      t.ok(answer.outgoingEmails.length <= 3);
      walked.push(...answer.outgoingEmails.map((e) => e.outgoingEmail));
      first ??= answer.nextCursor;
      cursor = answer.nextCursor;
      if (cursor === undefined) break;
    }
    t.same(walked, newestFirst, 'a walk of three per page visits each send once, in order');
    t.same(
      (await listing({ pageSize: 200, cursor: first })).outgoingEmails.map((e) => e.outgoingEmail),
      newestFirst.slice(3),
      'only pageSize may change along a walk',
    );
    const recorded = await listing({ stage: 'Recorded', account: 'quinn', pageSize: 1 });
    t.type(recorded.nextCursor, 'string');
    t.same(
      (await listing({ stage: 'Recorded', account: 'quinn', cursor: recorded.nextCursor })).outgoingEmails.map((e) => e.outgoingEmail),
      [seeded[1]!.outgoingEmail],
    );

    const cases: Array<[Record<string, string | number | undefined>, string | RegExp]> = [
      [{ pageSize: 0 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ pageSize: 201 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ pageSize: 'ten' }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ stage: 'Queued' }, STAGE_SENTENCE],
      [{ stage: 'recorded' }, STAGE_SENTENCE],
      [{ stage: 'Sending' }, STAGE_SENTENCE],
      [{ account: 'nobody' }, "The deployment configures no mail account named 'nobody'; name one of the configured Accounts:Id values."],
      [{ account: 'olga' }, "The deployment configures no mail account named 'olga'; name one of the configured Accounts:Id values."],
      [{ account: 'pat', cursor: first }, /issued under other filters/],
      [{ stage: 'Sent', cursor: first }, /issued under other filters/],
      [{ stage: 'Recorded', account: 'pat', cursor: recorded.nextCursor }, /issued under other filters/],
      [{ stage: 'Recorded', cursor: recorded.nextCursor }, /issued under other filters/],
      [{ cursor: recorded.nextCursor }, /issued under other filters/],
      [{ cursor: 'made-up' }, /not issued by this deployment/],
      [{ recipient: 'x' }, /^Leave out the query parameter recipient/],
    ];
    for (const [params, detail] of cases) {
      const what = `GET /outbox ${JSON.stringify(params)}`;
      const problem = problemOf(t, await operator(`/outbox${query(params)}`), 400, what);
      t.same(Object.keys(problem).sort(), ['detail', 'status', 'title'], what);
      if (typeof detail === 'string') t.equal(problem.detail, detail, what);
      else t.match(problem.detail, detail, what);
    }
    const cursorFromDeadLetters = first!;
    t.match(
      problemOf(t, await operator(`/jobs/dead-letters${query({ cursor: cursorFromDeadLetters })}`), 400, 'an outbox cursor on another page').detail,
      /not issued by this deployment for this page/,
    );
  });

  await t.test('listing: 50 unless asked, 200 at most', async (t) => {
    const more = Array.from({ length: 50 }, () => seedSend(db, 'pat', 'Sent'));
    const page = await listing();
    t.equal(page.outgoingEmails.length, 50, 'the default page holds 50');
    t.type(page.nextCursor, 'string');
    t.equal((await listing({ pageSize: 200 })).outgoingEmails.length, 57);
    t.same(leaked(JSON.stringify(await listing({ pageSize: 200 }))), []);
    secrets.push(...more.flatMap((s) => [s.subject, ...s.recipients]));
    t.same((await operator('/outbox/summary')).json(), { stageCounts: { Recorded: 3, TransmissionBegun: 1, Sent: 51, Refused: 1, Cancelled: 1 } });
  });

  await t.test('detail: recipients and what the server said; 404 for anything else', async (t) => {
    const sent = seeded[3]!;
    const answer = await operator(`/outbox/${sent.outgoingEmail}`);
    t.equal(answer.status, 200);
    const detail = answer.json();
    t.same(Object.keys(detail).sort(), [...ENTRY_KEYS, 'recipients'].sort());
    t.match(detail, { outgoingEmail: sent.outgoingEmail, account: 'quinn', stage: 'Sent', attemptCount: 1 });
    t.same(
      detail.recipients.map((r: Record<string, unknown>) => [r.address, r.header, r.state, r.replyCode]),
      [
        [sent.recipients[0], 'to', 'accepted', 250],
        [sent.recipients[1], 'cc', 'accepted', 250],
        [sent.recipients[2], 'bcc', 'accepted', 250],
      ],
    );
    for (const r of detail.recipients) t.ok(Number.isFinite(Date.parse(r.repliedAt)), 'repliedAt is an instant');
    t.same(
      (await operator(`/outbox/${seeded[0]!.outgoingEmail}`)).json().recipients.map((r: Record<string, unknown>) => [r.state, r.replyCode, r.repliedAt]),
      [
        ['pending', null, null],
        ['pending', null, null],
        ['pending', null, null],
      ],
      'a send never attempted: nothing said yet',
    );
    t.notOk(answer.body.includes(sent.subject), 'no subject in the detail either');
    t.equal(
      (
        await operator(
          `/outbox/o${sent.id
            .toString()
            .split('')
            .map((d) => `%3${d}`)
            .join('')}`,
        )
      ).status,
      200,
      'a percent-encoded id names the same send',
    );

    for (const id of ['o999999', 'x', '12', 'o0', 'O12', withdrawn.outgoingEmail, 'o%2F1']) {
      const problem = problemOf(t, await operator(`/outbox/${id}`), 404, `GET /outbox/${id}`);
      t.same(problem, { status: 404, title: 'Not found', detail: NOT_FOUND }, `GET /outbox/${id}`);
    }
    for (const path of [`/outbox/${sent.outgoingEmail}/recipients`, '/outbox/']) {
      const empty = await operator(path);
      t.same([empty.status, empty.body], [404, ''], `${path}: no route, an empty 404`);
    }
    const post = await operator(`/outbox/${sent.outgoingEmail}`, { json: {} });
    t.equal(post.status, 405, 'POST to a send');
    const getCancellation = await operator('/outbox/cancellation');
    t.equal(getCancellation.status, 405, 'GET /outbox/cancellation is not a send named cancellation');
  });

  await t.test('cancellation and requeue: bodies naming no send, unknown sends, limits', async (t) => {
    for (const path of ['/outbox/cancellation', '/outbox/requeue']) {
      for (const body of [{}, { outgoingEmail: 12 }, { outgoingEmail: '12' }, { outgoingEmail: 'o0' }, { outgoingEmail: '' }, { outgoingEmail: null }]) {
        const what = `POST ${path} ${JSON.stringify(body)}`;
        t.same(problemOf(t, await operator(path, { json: body }), 400, what), { status: 400, title: 'Invalid request', detail: SHAPE }, what);
      }
      t.same((await operator(path, { json: { outgoingEmail: 'o999999' } })).json(), { outgoingEmail: 'o999999', outcome: 'RecordUnknown' }, `${path} unknown`);
      t.same(
        (await operator(path, { json: { outgoingEmail: withdrawn.outgoingEmail } })).json(),
        { outgoingEmail: withdrawn.outgoingEmail, outcome: 'RecordUnknown' },
        `${path}: a send of a withdrawn account is unknown`,
      );
      t.match(
        problemOf(t, await operator(path, { json: { outgoingEmail: 'o1', all: true } }), 400, `${path} extra member`).detail,
        /^Leave out the member all/,
      );
      t.match(problemOf(t, await operator(path, { json: [{ outgoingEmail: 'o1' }] }), 400, `${path} a set`).detail, /^Send a JSON object as the body\.$/);
      t.match(problemOf(t, await operator(path, { body: 'outgoingEmail=o1' }), 400, `${path} not JSON`).detail, /well-formed JSON/);
      t.same(problemOf(t, await operator(path, { json: { outgoingEmail: seeded[0]!.outgoingEmail, pad: 'x'.repeat(4 * 1024) } }), 413, `${path} past 4 KB`), {
        status: 413,
        title: 'Request body too large',
        detail: 'Send a body of at most 4096 bytes.',
      });
    }
    t.match(
      problemOf(t, await operator('/outbox/cancellation', { json: { outgoingEmail: 'o1', refusalRestated: true } }), 400, 'cancellation restating').detail,
      /^Leave out the member refusalRestated/,
    );
    t.equal(
      problemOf(t, await operator('/outbox/requeue', { json: { outgoingEmail: 'o1', refusalRestated: 'yes' } }), 400, 'refusalRestated not boolean').detail,
      'Send refusalRestated as true or false, or leave it out.',
    );
    t.same((await operator('/outbox/requeue', { json: { outgoingEmail: 'o999999', refusalRestated: true } })).json(), {
      outgoingEmail: 'o999999',
      outcome: 'RecordUnknown',
    });
    t.same((await operator('/outbox/summary')).json().stageCounts.Cancelled, 1, 'nothing refused changed anything');
  });

  await t.test('403 to a credential lacking the route permission, before anything else', async (t) => {
    const routes = [
      { method: 'GET' as const, path: '/outbox/summary', permission: 'service.admin.read', keys: [svc.keys.nothing] },
      { method: 'GET' as const, path: '/outbox', permission: 'service.admin.read', keys: [svc.keys.nothing] },
      {
        method: 'GET' as const,
        path: `/outbox/${seeded[0]!.outgoingEmail}`,
        permission: 'service.admin.audit.read',
        keys: [svc.keys.nothing, svc.keys.reader],
      },
      { method: 'GET' as const, path: '/outbox/not-an-id', permission: 'service.admin.audit.read', keys: [svc.keys.reader] },
      { method: 'POST' as const, path: '/outbox/cancellation', permission: 'service.admin.operate', keys: [svc.keys.nothing, svc.keys.reader] },
      { method: 'POST' as const, path: '/outbox/requeue', permission: 'service.admin.operate', keys: [svc.keys.nothing, svc.keys.reader] },
    ];
    const before = svc.logs.events('auth.refused').length;
    let count = 0;
    for (const route of routes) {
      for (const apiKey of route.keys) {
        count += 1;
        const answer = await adminCall(`${api}${route.path}`, {
          method: route.method,
          apiKey,
          ...(route.method === 'POST' ? { json: { outgoingEmail: seeded[0]!.outgoingEmail } } : {}),
        });
        t.same(problemOf(t, answer, 403, `${route.method} ${route.path}`), {
          status: 403,
          detail: `The credential does not hold the permission ${route.permission}.`,
          permission: route.permission,
        });
      }
    }
    const refused = svc.logs.events('auth.refused').slice(before);
    t.equal(refused.length, count, 'each refusal counted once');
    t.ok(
      refused.every((l) => String(l.target).startsWith('GET /api/admin/outbox') || String(l.target).startsWith('POST /api/admin/outbox')),
      'logged by route',
    );
    t.same(refused.filter((l) => String(l.target).includes('{id}')).length, 3, 'the detail is logged by its template, never the id sent');
    t.equal((await adminCall(`${api}/outbox`, { apiKey: svc.keys.reader })).status, 200, 'read is enough for the listing');
  });

  t.same(leaked(svc.logs.raw()), [], 'no recipient or subject in any log line');
});
