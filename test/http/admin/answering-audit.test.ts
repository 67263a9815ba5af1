/**
 * The answering audit route through a service started for real (a private
 * Dovecot behind two accounts, synchronization off). The answering actor
 * is not built yet, so its writes are made the way it will make them:
 * `recordAnsweringRuns` on the service's database, over mail stored with
 * the store's own functions, before the service starts. pat's `old` folder
 * was mapped once and is withdrawn, so the real erasure route may erase it.
 * It proves:
 * - a page is newest first (ended, then id), one account at a time; runs
 *   of a question across both accounts share a runId; an entry in full,
 *   reads by position;
 * - a walk with every pageSize from 1 to past the end visits every entry
 *   once and ends when no cursor comes back;
 * - from (inclusive) and before (exclusive) narrow the walk; a cursor with
 *   other filters is 400, with only pageSize changed it goes on;
 * - pageSize 0 and 101 are 400, and so are an unconfigured account and an
 *   empty range; a credential without service.admin.audit.read gets 403;
 * - a run naming an ending this build does not declare is omitted, and one
 *   warning names the account and the count, nothing else;
 * - erasing a folder through the route removes its messages from the runs
 *   that read them; the runs stay;
 * - no subject of the mail read reaches an answer or a log line.
 */
import { randomUUID } from 'node:crypto';
import Libsql from 'libsql';
import t from 'tap';
import type { AnsweringRunRecord } from '../../../actors/answering/protocol.ts';
import { encodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { NOT_ISSUED_HERE, OTHER_FILTERS } from '../../../http/admin/cursor.ts';
import { EMPTY_RANGE } from '../../../http/admin/use-cases/audit-page.ts';
import { ANSWERING_AUDIT_PATH } from '../../../http/admin/use-cases/answering-audit.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { recordAnsweringRuns } from '../../../runtime/store/answering/audit.ts';
import { syncBindings } from '../../../runtime/store/mailbox/bindings.ts';
import { storeBatch } from '../../../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { adminCall, adminEndpointSection, query } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService } from '../../helpers/sync-service.ts';
import { fetched, idOf } from '../../runtime/store/mailbox/helpers.ts';

t.setTimeout(300_000);

const KEYS = {
  operator: `mc_${randomUUID().replaceAll('-', '')}`,
  reader: `mc_${randomUUID().replaceAll('-', '')}`,
  nothing: `mc_${randomUUID().replaceAll('-', '')}`,
};
const BASE = Date.parse('2026-11-20T00:00:00.000Z');
/** In every subject of the mail the runs read: must appear in no answer and no log line. */
const SUBJECT_MARK = 'Quarterly-Harvest-Ledger-9c41';

type Entry = { runId: string; accountId: string; endedAt: string; reads: Array<{ position: number; storedEmailId: string; cited: boolean }> };

/** Message ids by account and folder, stored with the store's own functions before the service starts. */
type Mail = { pat: { inbox: number[]; old: number[] }; quinn: number[] };

function seedMail(database: string): Mail {
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Full' });
  try {
    migrate(db);
    reconcileAccounts(db, ['pat', 'quinn'], 1);
    const store = (account: string, alias: string, uids: number[], bindings: Array<{ alias: string; path: string }>): number[] => {
      const binding = syncBindings(db, account, bindings, 1).find((b) => b.alias === alias)!;
      const result = storeBatch(db, {
        accountId: account,
        bindingId: binding.id,
        uidValidity: 7,
        expectedEpoch: null,
        messages: uids.map((uid) => fetched(uid, { subject: `${SUBJECT_MARK} ${account} ${alias} ${uid}`, body: `Body ${uid}` })),
        advanceTo: { lastUid: Math.max(...uids), highestModseq: 9n },
        now: 2,
      });
      if (!result.ok) throw new Error('setup refused');
      return uids.map((uid) => idOf(db, binding.id, uid));
    };
    const both = [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'old', path: 'Old' },
    ];
    const mail = { pat: { inbox: store('pat', 'inbox', [1, 2, 3, 4], both), old: store('pat', 'old', [1, 2], both) }, quinn: [] as number[] };
    mail.quinn = store('quinn', 'inbox', [1, 2], [{ alias: 'inbox', path: 'INBOX' }]);
    // The operator withdrew `old` from pat's mapping: its mail stays until erased.
    syncBindings(db, 'pat', [{ alias: 'inbox', path: 'INBOX' }], 3);
    return mail;
  } finally {
    db.close();
  }
}

/** Nine runs of pat (two pairs share an instant) and two of quinn, one of them the second half of a question pat's run-3 shares. */
function runs(mail: Mail): AnsweringRunRecord[] {
  const at = (minutes: number) => BASE + minutes * 60_000;
  const base = { endpointAlias: 'local-chat', instructionVersion: 'ask-mail/1', ending: 'answered' as const, degradation: [] };
  const pat: AnsweringRunRecord[] = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({
    ...base,
    runId: `run-${i}`,
    accountId: 'pat',
    beganAt: at(Math.ceil(i / 2) * 10) - 2_000,
    endedAt: at(Math.ceil(i / 2) * 10),
    ...(i === 4 ? { ending: 'calls-bound-reached' as const, degradation: ['lexical-only' as const, 'retrieval-cut' as const] } : {}),
    reads:
      i === 3
        ? [
            { position: 0, messageId: mail.pat.old[0]!, cited: true },
            { position: 1, messageId: mail.pat.inbox[2]!, cited: false },
            { position: 3, messageId: mail.pat.inbox[0]!, cited: true },
          ]
        : [{ position: 0, messageId: mail.pat.inbox[i % 4]!, cited: true }],
  }));
  return [
    // Written in an order unlike the page order, so ids alone would not sort the page.
    ...[pat[4]!, pat[0]!, pat[8]!, pat[2]!, pat[6]!, pat[1]!, pat[3]!, pat[7]!, pat[5]!],
    { ...pat[2]!, accountId: 'quinn', reads: [{ position: 2, messageId: mail.quinn[1]!, cited: true }] },
    { ...base, runId: 'run-q', accountId: 'quinn', beganAt: at(1), endedAt: at(2), reads: [{ position: 0, messageId: mail.quinn[0]!, cited: false }] },
  ];
}

t.test('the answering audit, page by page', async (t) => {
  const dovecot = await startDovecot({
    users: [
      { user: 'pat', password: 'pw-pat' },
      { user: 'quinn', password: 'pw-quinn' },
    ],
  });
  t.teardown(() => dovecot.stop());
  const dir = tempDir(t);
  const mail = seedMail(`${dir}/mailcairn.db`);
  const records = runs(mail);
  const writer = openStore({ database: `${dir}/mailcairn.db`, busyTimeoutMs: 5_000, synchronous: 'Full' });
  recordAnsweringRuns(writer, records);
  writer.close();
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      { id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] },
      { id: 'quinn', user: 'quinn', folders: [{ Alias: 'inbox' }] },
    ],
    { MailSynchronization: { Enabled: false }, AdminEndpoint: adminEndpointSection(dir, 0, KEYS) },
  );
  t.equal(sync.database, `${dir}/mailcairn.db`, 'the service opened the seeded database');
  t.teardown(() => sync.service.stop());
  const admin = `http://127.0.0.1:${sync.service.admin!.port}`;
  const url = `${admin}${ANSWERING_AUDIT_PATH}`;
  const answers: string[] = [];
  const audit = async (params: Record<string, string | number | undefined>, apiKey = KEYS.operator) => {
    const answer = await adminCall(`${url}${query(params)}`, { apiKey });
    answers.push(answer.body);
    return answer;
  };
  const db = new Libsql(sync.database, { timeout: 5_000 });
  t.teardown(() => db.close());
  const ids = new Map(
    (db.prepare('SELECT id, run_id, account_id FROM answering_runs').all([]) as Array<{ id: number; run_id: string; account_id: string }>).map((r) => [
      `${r.account_id}/${r.run_id}`,
      Number(r.id),
    ]),
  );
  const idOfRun = (r: AnsweringRunRecord) => ids.get(`${r.accountId}/${r.runId}`)!;
  const newestFirst = (a: AnsweringRunRecord, b: AnsweringRunRecord) => b.endedAt - a.endedAt || idOfRun(b) - idOfRun(a);
  const patRuns = records.filter((r) => r.accountId === 'pat').sort(newestFirst);

  /** Every page of a walk; asserts a cursor on all pages but the last. */
  const walk = async (params: Record<string, string | number | undefined>): Promise<Entry[]> => {
    const seen: Entry[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const answer = await audit({ ...params, cursor });
      t.equal(answer.status, 200);
      const body = answer.json();
      seen.push(...body.entries);
      if (body.nextCursor === undefined) return seen;
      cursor = body.nextCursor;
    }
    throw new Error('the walk did not end');
  };

  await t.test('a page is newest first, one account at a time', async (t) => {
    const page = (await audit({ account: 'pat' })).json();
    t.same(
      page.entries.map((e: Entry) => e.runId),
      patRuns.map((r) => r.runId),
      'by ended, then by when written, newest first',
    );
    t.notOk('nextCursor' in page, 'the default page (50) holds them all; no cursor');
    const shared = page.entries.find((e: Entry) => e.runId === 'run-3');
    t.same(shared, {
      runId: 'run-3',
      accountId: 'pat',
      endpointAlias: 'local-chat',
      instructionVersion: 'ask-mail/1',
      beganAt: new Date(BASE + 20 * 60_000 - 2_000).toISOString(),
      endedAt: new Date(BASE + 20 * 60_000).toISOString(),
      ending: 'answered',
      degradation: [],
      reads: [
        { position: 0, storedEmailId: encodeStoredEmailId(mail.pat.old[0]!), cited: true },
        { position: 1, storedEmailId: encodeStoredEmailId(mail.pat.inbox[2]!), cited: false },
        { position: 3, storedEmailId: encodeStoredEmailId(mail.pat.inbox[0]!), cited: true },
      ],
    });
    t.match(
      page.entries.find((e: Entry) => e.runId === 'run-4'),
      { ending: 'calls-bound-reached', degradation: ['lexical-only', 'retrieval-cut'] },
    );
    const quinn = (await audit({ account: 'quinn' })).json();
    t.same(
      quinn.entries.map((e: Entry) => [e.runId, e.accountId, e.reads.map((r) => r.storedEmailId)]),
      [
        ['run-3', 'quinn', [encodeStoredEmailId(mail.quinn[1]!)]],
        ['run-q', 'quinn', [encodeStoredEmailId(mail.quinn[0]!)]],
      ],
      "quinn's half of the shared question, with quinn's reads only; none of pat's runs",
    );
  });

  await t.test('a walk with any pageSize visits every entry once', async (t) => {
    for (let pageSize = 1; pageSize <= patRuns.length + 1; pageSize++) {
      const seen = await walk({ account: 'pat', pageSize });
      t.same(
        seen.map((e) => e.runId),
        patRuns.map((r) => r.runId),
        `pageSize ${pageSize}`,
      );
    }
  });

  await t.test('from and before narrow the walk; a cursor is bound to them', async (t) => {
    const from = BASE + 20 * 60_000;
    const before = BASE + 40 * 60_000;
    const ranged = await walk({ account: 'pat', from: new Date(from).toISOString(), before: '2026-11-20T01:40:00+01:00', pageSize: 1 });
    t.same(
      ranged.map((e) => e.runId),
      patRuns.filter((r) => r.endedAt >= from && r.endedAt < before).map((r) => r.runId),
      'from inclusive, before exclusive, in any zone',
    );
    t.same(
      ranged.map((e) => e.runId),
      ['run-6', 'run-5', 'run-4', 'run-3'],
    );

    const first = (await audit({ account: 'pat', pageSize: 2 })).json();
    const cursor: string = first.nextCursor;
    for (const [params, what] of [
      [{ account: 'quinn', cursor }, 'another account'],
      [{ account: 'pat', from: '2026-11-20T00:00:00Z', cursor }, 'a range added'],
      [{ account: 'pat', before: '2026-11-21T00:00:00Z', cursor }, 'an end added'],
    ] as const) {
      const answer = await audit(params);
      t.equal(answer.status, 400, what);
      t.same(answer.json(), { status: 400, title: 'Invalid request', detail: OTHER_FILTERS }, what);
    }
    const elsewhere = await adminCall(`${admin}/api/admin/mailbox/mutations/audit${query({ account: 'pat', cursor })}`, { apiKey: KEYS.operator });
    t.same(elsewhere.json(), { status: 400, title: 'Invalid request', detail: NOT_ISSUED_HERE }, 'the cursor walks this page only');
    const resumed = (await audit({ account: 'pat', pageSize: 3, cursor })).json();
    t.same(
      resumed.entries.map((e: Entry) => e.runId),
      patRuns.slice(2, 5).map((r) => r.runId),
      'only pageSize changed: the walk goes on where the page ended',
    );
  });

  await t.test('400 and 403', async (t) => {
    const cases: Array<[Record<string, string | number | undefined>, RegExp | string]> = [
      [{ account: 'pat', pageSize: 0 }, 'Send pageSize as a whole number from 1 to 100.'],
      [{ account: 'pat', pageSize: 101 }, 'Send pageSize as a whole number from 1 to 100.'],
      [{}, /^Name the account in account/],
      [{ account: 'nobody' }, /^The deployment configures no mail account named 'nobody'/],
      [{ account: 'pat', from: '2026-11-21T00:00:00Z', before: '2026-11-20T00:00:00Z' }, EMPTY_RANGE],
      [{ account: 'pat', mutation: 'relocate' }, 'Leave out the query parameter mutation; this route does not take it.'],
    ];
    for (const [params, detail] of cases) {
      const answer = await audit(params);
      t.equal(answer.status, 400, JSON.stringify(params));
      if (typeof detail === 'string') t.equal(answer.json().detail, detail, JSON.stringify(params));
      else t.match(answer.json().detail, detail, JSON.stringify(params));
    }
    t.equal((await audit({ account: 'pat', pageSize: 100 })).status, 200, 'pageSize 100 is taken');
    for (const key of [KEYS.nothing, KEYS.reader]) {
      const answer = await audit({ account: 'pat' }, key);
      t.equal(answer.status, 403);
      t.same(answer.json(), {
        status: 403,
        detail: 'The credential does not hold the permission service.admin.audit.read.',
        permission: 'service.admin.audit.read',
      });
    }
  });

  await t.test('a run naming an ending this build does not declare is omitted with one warning', async (t) => {
    db.prepare(
      `INSERT INTO answering_runs (run_id, account_id, endpoint_alias, instruction_version, began_at, ended_at, ending, degradation)
       VALUES ('run-later', 'pat', 'later-endpoint-5d2e', 'ask-mail/9', ?, ?, 'future-ending', '[]')`,
    ).run([BASE + 35 * 60_000, BASE + 35 * 60_000 + 1]);
    const before = sync.logs.events('admin.answering-audit-entries-omitted').length;
    const page = (await audit({ account: 'pat' })).json();
    t.same(
      page.entries.map((e: Entry) => e.runId),
      patRuns.map((r) => r.runId),
      'the same entries as before it was written',
    );
    const warnings = sync.logs.events('admin.answering-audit-entries-omitted').slice(before);
    t.equal(warnings.length, 1, 'one warning');
    t.match(warnings[0], { level: 40, account: 'pat', omittedCount: 1 });
    const { level: _l, time: _t, pid: _p, hostname: _h, msg: _m, event: _e, account: _a, omittedCount: _o, ...rest } = warnings[0]!;
    t.same(rest, {}, 'it names the account and the count only');
    t.notOk(sync.logs.raw().includes('later-endpoint-5d2e'), 'nothing the row holds is logged');
    // Walks of every size still see each known entry once; the omitted row takes its place in one window.
    t.same(
      (await walk({ account: 'pat', pageSize: 2 })).map((e) => e.runId),
      patRuns.map((r) => r.runId),
    );
  });

  await t.test('erasing a folder removes its messages from the runs; the runs stay', async (t) => {
    const erased = await adminCall(`${admin}/api/admin/folders/erasure`, { apiKey: KEYS.operator, json: { account: 'pat', folder: 'old' } });
    t.equal(erased.status, 200);
    t.match(erased.json(), { erasedEmailCount: 2, emailsRemain: false });
    const page = (await audit({ account: 'pat' })).json();
    t.same(
      page.entries.map((e: Entry) => e.runId),
      patRuns.map((r) => r.runId),
      'every run stays',
    );
    t.same(
      page.entries.find((e: Entry) => e.runId === 'run-3').reads,
      [
        { position: 1, storedEmailId: encodeStoredEmailId(mail.pat.inbox[2]!), cited: false },
        { position: 3, storedEmailId: encodeStoredEmailId(mail.pat.inbox[0]!), cited: true },
      ],
      'the erased message is gone from the run that read it',
    );
  });

  await t.test('no subject reaches an answer or a log line', async (t) => {
    t.ok(answers.length > 40, 'many answers were read');
    t.notOk(
      answers.some((body) => body.includes(SUBJECT_MARK)),
      'no answer names a subject',
    );
    t.notOk(sync.logs.raw().includes(SUBJECT_MARK), 'no log line names a subject');
    const stored = db.prepare('SELECT count(*) AS n FROM search_documents WHERE subject LIKE ?').get([`%${SUBJECT_MARK}%`]) as { n: number };
    t.equal(Number(stored.n), 6, 'the subjects of the mail read are stored, so the scan could find them');
  });
});
