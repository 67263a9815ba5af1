/**
 * The mailbox-change audit route through a service started for real (a
 * private Dovecot behind two accounts, synchronization off). The table is
 * empty until agents can change mail, so rows are seeded with SQL as the
 * sync actor would write them, in an order unlike the page order, with
 * ties on the instant and three rows naming a change this build does not
 * know:
 * - a walk visits every known row exactly once, newest first (ended, then
 *   id), and ends when no cursor comes back; rows of another account never
 *   appear; unknown rows are omitted with a warning naming the account and
 *   the count, and nothing they hold reaches a log line; the journal's
 *   placements (`append`, `remove-appended`, the outbox's sent copies and
 *   drafts), which this build writes but the admin surface does not list,
 *   are neither shown nor counted as omitted;
 * - `mutation`, `from` (inclusive) and `before` (exclusive) narrow the walk;
 * - a cursor presented with other filters, from another deployment or
 *   altered is 400; changing only pageSize continues where the page ended;
 * - every other 400 (range, pageSize, mutation, instants, account,
 *   unknown parameter) and the 403 problem document.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import t from 'tap';
import { encodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { createCursors, NOT_ISSUED_HERE, OTHER_FILTERS } from '../../../http/admin/cursor.ts';
import { EMPTY_RANGE } from '../../../http/admin/use-cases/audit-page.ts';
import { MUTATION_AUDIT_PATH } from '../../../http/admin/use-cases/mutation-audit.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { adminCall, query } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const KEY_AUDITOR = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READER = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_NOTHING = `mc_${randomUUID().replaceAll('-', '')}`;

const KINDS = ['relocate', 'delete', 'set-seen', 'copy', 'set-flagged', 'add-keywords', 'remove-keywords', 'set-keywords'];
const PLACEMENTS = ['append', 'remove-appended'];
const UNKNOWN_PATH = 'Later/Unknown-Path-7f3a';
const UNKNOWN_REQUESTER = 'requester-unknown-7f3a';
const BASE = Date.parse('2026-11-20T00:00:00.000Z');

type Seed = {
  account: string;
  mutation: string;
  messageId: number | null;
  sourcePath: string;
  targetPath: string | null;
  sourceUid: number;
  targetUid: number | null;
  requester: string;
  requestedAt: number;
  endedAt: number;
  outcome: string;
};

/** 26 rows of pat (pairs share an instant; rows 5, 12 and 19 name an unknown change), 2 placements of pat, and 4 of quinn. */
function seeds(): Seed[] {
  const rows: Seed[] = [];
  for (let i = 1; i <= 26; i++) {
    const unknown = i === 5 || i === 12 || i === 19;
    const mutation = unknown ? 'archive-later' : KINDS[i % KINDS.length]!;
    const moves = mutation === 'relocate' || mutation === 'copy';
    const endedAt = BASE + Math.floor(i / 2) * 60_000;
    rows.push({
      account: 'pat',
      mutation,
      messageId: i % 4 === 0 ? null : 1_000 + i,
      sourcePath: unknown ? UNKNOWN_PATH : `INBOX/Path-${i}`,
      targetPath: moves ? `Archive/Path-${i}` : null,
      sourceUid: 100 + i,
      targetUid: moves ? 200 + i : null,
      requester: unknown ? UNKNOWN_REQUESTER : 'assistant',
      requestedAt: endedAt - 500,
      endedAt,
      outcome: i % 7 === 0 ? 'refused' : 'ok',
    });
  }
  // Placements, between the others in time: known to this build, not among the surface's eight kinds.
  for (const [i, mutation] of [
    [3, 'append'],
    [9, 'remove-appended'],
  ] as const) {
    rows.push({
      account: 'pat',
      mutation,
      messageId: null,
      sourcePath: mutation === 'append' ? '' : 'Drafts',
      targetPath: mutation === 'append' ? 'Sent' : null,
      sourceUid: 300 + i,
      targetUid: 400 + i,
      requester: 'assistant',
      requestedAt: BASE + i * 60_000 - 500,
      endedAt: BASE + i * 60_000 + 1,
      outcome: 'applied',
    });
  }
  for (let i = 1; i <= 4; i++) {
    rows.push({
      account: 'quinn',
      mutation: 'delete',
      messageId: 5_000 + i,
      sourcePath: 'INBOX',
      targetPath: null,
      sourceUid: i,
      targetUid: null,
      requester: 'assistant',
      requestedAt: BASE,
      endedAt: BASE + i * 1_000,
      outcome: 'ok',
    });
  }
  return rows;
}

/** Inserted in an order unlike the page order, so ids alone would not sort the page. Returns the rows with their ids. */
function seed(database: string): Array<Seed & { id: number }> {
  const rows = seeds();
  const order = rows.map((_, i) => i).sort((a, b) => ((a * 7) % 30) - ((b * 7) % 30));
  const db = new Libsql(database, { timeout: 5_000 });
  try {
    const insert = db.prepare(
      `INSERT INTO mutation_audit (account_id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, detail, requester, requested_at, ended_at, outcome)
       VALUES (?, ?, ?, ?, ?, 1700000000, ?, ?, NULL, ?, ?, ?, ?)`,
    );
    const out: Array<Seed & { id: number }> = [];
    for (const i of order) {
      const r = rows[i]!;
      const id = Number(
        insert.run([r.account, r.mutation, r.messageId, r.sourcePath, r.targetPath, r.sourceUid, r.targetUid, r.requester, r.requestedAt, r.endedAt, r.outcome])
          .lastInsertRowid,
      );
      out.push({ ...r, id });
    }
    return out;
  } finally {
    db.close();
  }
}

t.test('the mailbox-change audit, page by page', async (t) => {
  const dovecot = await startDovecot({
    users: [
      { user: 'pat', password: 'pw-pat' },
      { user: 'quinn', password: 'pw-quinn' },
    ],
  });
  t.teardown(() => dovecot.stop());
  const dir = tempDir(t);
  const key = (name: string, secret: string): string => {
    writeFileSync(join(dir, name), secret, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      { id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] },
      { id: 'quinn', user: 'quinn', folders: [{ Alias: 'inbox' }] },
    ],
    {
      MailSynchronization: { Enabled: false },
      AdminEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [
          { ApiKey: { Name: 'auditor', SecretReference: key('auditor.key', KEY_AUDITOR), Lifetime: 'NoLimit' }, Permissions: ['service.admin.audit.read'] },
          { ApiKey: { Name: 'reader', SecretReference: key('reader.key', KEY_READER), Lifetime: 'NoLimit' }, Permissions: ['service.admin.read'] },
          { ApiKey: { Name: 'nothing', SecretReference: key('nothing.key', KEY_NOTHING), Lifetime: 'NoLimit' }, Permissions: [] },
        ],
        RateLimiting: { TokenCapacity: 1_000, TokensPerReplenishmentPeriod: 1_000, ReplenishmentPeriod: '00:01:00' },
      },
    },
  );
  t.teardown(() => sync.service.stop());
  const url = `http://127.0.0.1:${sync.service.admin!.port}${MUTATION_AUDIT_PATH}`;
  const audit = (params: Record<string, string | number | undefined>, apiKey = KEY_AUDITOR) => adminCall(`${url}${query(params)}`, { apiKey });

  t.same((await audit({ account: 'pat' })).json(), { entries: [] }, 'empty until agents change mail; no nextCursor');
  const rows = seed(sync.database);
  const newestFirst = (a: Seed & { id: number }, b: Seed & { id: number }) => b.endedAt - a.endedAt || b.id - a.id;
  const known = rows.filter((r) => r.account === 'pat' && KINDS.includes(r.mutation)).sort(newestFirst);
  t.equal(known.length, 23);

  /** Every page of a walk; asserts the cursor is present on all pages but the last. */
  const walk = async (params: Record<string, string | number | undefined>): Promise<Array<{ id: number; endedAt: string; mutation: string }>> => {
    const seen: Array<{ id: number; endedAt: string; mutation: string }> = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const answer = await audit({ ...params, cursor });
      t.equal(answer.status, 200);
      const body = answer.json();
      seen.push(...body.entries);
      if (body.nextCursor === undefined) return seen;
      t.type(body.nextCursor, 'string');
      cursor = body.nextCursor;
    }
    throw new Error('the walk did not end');
  };

  await t.test('a walk visits every entry once, newest first', async (t) => {
    const before = sync.logs.events('admin.audit-entries-omitted').length;
    const seen = await walk({ account: 'pat', pageSize: 4 });
    t.same(
      seen.map((e) => e.id),
      known.map((r) => r.id),
      'every known row once, by ended then id, newest first',
    );
    t.equal(new Set(seen.map((e) => e.id)).size, seen.length, 'no entry twice');
    const warnings = sync.logs.events('admin.audit-entries-omitted').slice(before);
    t.ok(warnings.length >= 1);
    t.match(
      warnings,
      warnings.map(() => ({ level: 40, account: 'pat', omittedCount: Number })),
      'a warning names the account and the count',
    );
    t.equal(
      warnings.reduce((n, w) => n + Number(w.omittedCount), 0),
      3,
      'the three unknown rows, counted once each (placements are not counted)',
    );
    const raw = sync.logs.raw();
    for (const held of [UNKNOWN_PATH, UNKNOWN_REQUESTER, 'INBOX/Path-', 'Archive/Path-']) t.notOk(raw.includes(held), 'nothing an entry holds is logged');

    const everything = (await audit({ account: 'pat' })).json();
    t.equal(everything.entries.length, 23, 'the default page (50) holds them all');
    t.notOk('nextCursor' in everything, 'and no cursor');
    const copy = known.find((r) => r.mutation === 'copy' && r.messageId !== null)!;
    t.same(
      everything.entries.find((e: { id: number }) => e.id === copy.id),
      {
        id: copy.id,
        mutation: 'copy',
        storedEmailId: encodeStoredEmailId(copy.messageId!),
        sourceFolderPath: copy.sourcePath,
        targetFolderPath: copy.targetPath,
        uidValidity: 1700000000,
        sourceUid: copy.sourceUid,
        targetUid: copy.targetUid,
        requester: 'assistant',
        requestedAt: new Date(copy.requestedAt).toISOString(),
        endedAt: new Date(copy.endedAt).toISOString(),
        outcome: copy.outcome,
      },
      'an entry in full',
    );
    const unlinked = known.find((r) => r.messageId === null && r.targetPath === null)!;
    t.match(
      everything.entries.find((e: { id: number }) => e.id === unlinked.id),
      { storedEmailId: null, targetFolderPath: null, targetUid: null },
      'what an entry does not name is null',
    );
    t.same(
      (await walk({ account: 'quinn', pageSize: 3 })).map((e) => e.id),
      rows
        .filter((r) => r.account === 'quinn')
        .sort(newestFirst)
        .map((r) => r.id),
      'one account at a time',
    );
  });

  await t.test('filters narrow the walk', async (t) => {
    const relocations = await walk({ account: 'pat', mutation: 'relocate', pageSize: 1 });
    t.same(
      relocations.map((e) => e.id),
      known.filter((r) => r.mutation === 'relocate').map((r) => r.id),
    );
    // from is inclusive and before exclusive; both fall on instants two rows share.
    const from = BASE + 3 * 60_000;
    const until = BASE + 9 * 60_000;
    const ranged = await walk({ account: 'pat', from: new Date(from).toISOString(), before: '2026-11-20T01:09:00+01:00', pageSize: 3 });
    const expected = known.filter((r) => r.endedAt >= from && r.endedAt < until);
    t.ok(expected.some((r) => r.endedAt === from) && known.some((r) => r.endedAt === until), 'the bounds fall on seeded instants');
    t.same(
      ranged.map((e) => e.id),
      expected.map((r) => r.id),
      'from inclusive, before exclusive, in any zone',
    );
  });

  await t.test('cursors are bound to their filters and to this deployment', async (t) => {
    const first = (await audit({ account: 'pat', pageSize: 4 })).json();
    const cursor: string = first.nextCursor;
    const refused = async (params: Record<string, string | number | undefined>, detail: string, what: string) => {
      const answer = await audit(params);
      t.equal(answer.status, 400, what);
      t.same(answer.json(), { status: 400, title: 'Invalid request', detail }, what);
    };
    await refused({ account: 'pat', mutation: 'delete', cursor }, OTHER_FILTERS, 'another mutation');
    await refused({ account: 'pat', from: '2026-11-20T00:00:00Z', cursor }, OTHER_FILTERS, 'a range added');
    await refused({ account: 'quinn', cursor }, OTHER_FILTERS, 'another account');
    const foreign = createCursors(randomBytes(32)).issue(MUTATION_AUDIT_PATH, { account: 'pat' }, [known[3]!.endedAt, known[3]!.id]);
    await refused({ account: 'pat', cursor: foreign }, NOT_ISSUED_HERE, 'a cursor another deployment signed');
    await refused({ account: 'pat', cursor: `${cursor.slice(0, -3)}AAA` }, NOT_ISSUED_HERE, 'an altered cursor');
    await refused({ account: 'pat', cursor: 'not-a-cursor' }, NOT_ISSUED_HERE, 'made up');
    const resumed = (await audit({ account: 'pat', pageSize: 10, cursor })).json();
    // The next ten rows after the first page's last, less the one naming an unknown change; placements take no place in the window.
    const all = rows.filter((r) => r.account === 'pat' && !PLACEMENTS.includes(r.mutation)).sort(newestFirst);
    const window = all.slice(all.findIndex((r) => r.id === first.entries.at(-1).id) + 1).slice(0, 10);
    t.ok(
      window.some((r) => !KINDS.includes(r.mutation)),
      'the window holds an unknown row',
    );
    t.same(
      resumed.entries.map((e: { id: number }) => e.id),
      window.filter((r) => KINDS.includes(r.mutation)).map((r) => r.id),
      'only pageSize changed: the walk goes on where the page ended',
    );
    t.type(resumed.nextCursor, 'string');
  });

  await t.test('400: a sentence naming what to change', async (t) => {
    const cases: Array<[Record<string, string | number | undefined>, RegExp | string]> = [
      [{}, /^Name the account in account/],
      [{ account: 'nobody' }, /^The deployment configures no mail account named 'nobody'/],
      [{ account: 'pat', pageSize: 0 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ account: 'pat', pageSize: 201 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ account: 'pat', pageSize: 'ten' }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ account: 'pat', pageSize: '1.5' }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ account: 'pat', mutation: 'archive-later' }, `Send mutation as one of ${KINDS.join(', ')}, or leave it out.`],
      [{ account: 'pat', from: 'yesterday' }, /^Send from as an ISO 8601 instant with a time zone/],
      [{ account: 'pat', before: '2026-11-20T00:00:00' }, /^Send before as an ISO 8601 instant with a time zone/],
      [{ account: 'pat', from: '2026-11-20T00:00:00Z', before: '2026-11-20T01:00:00+01:00' }, EMPTY_RANGE],
      [{ account: 'pat', from: '2026-11-21T00:00:00Z', before: '2026-11-20T00:00:00Z' }, EMPTY_RANGE],
      [{ account: 'pat', order: 'oldest' }, 'Leave out the query parameter order; this route does not take it.'],
      [{ account: 'pat', cursor: '' }, /^Send cursor as nextCursor of the previous page/],
    ];
    for (const [params, detail] of cases) {
      const answer = await audit(params);
      t.equal(answer.status, 400, JSON.stringify(params));
      t.equal(answer.type, 'application/problem+json');
      const problem = answer.json();
      t.same(Object.keys(problem).sort(), ['detail', 'status', 'title']);
      if (typeof detail === 'string') t.equal(problem.detail, detail, JSON.stringify(params));
      else t.match(problem.detail, detail, JSON.stringify(params));
      t.notOk(answer.body.includes('yesterday') || answer.body.includes('archive-later') || answer.body.includes('oldest'), 'nothing sent is repeated');
    }
  });

  await t.test('403 to a credential lacking service.admin.audit.read', async (t) => {
    for (const key of [KEY_NOTHING, KEY_READER]) {
      const answer = await audit({ account: 'pat' }, key);
      t.equal(answer.status, 403);
      t.same(answer.json(), {
        status: 403,
        detail: 'The credential does not hold the permission service.admin.audit.read.',
        permission: 'service.admin.audit.read',
      });
    }
    t.match(sync.logs.events('auth.refused'), [
      { surface: 'admin', target: `GET ${MUTATION_AUDIT_PATH}`, permission: 'service.admin.audit.read', credential: 'nothing' },
      { surface: 'admin', target: `GET ${MUTATION_AUDIT_PATH}`, permission: 'service.admin.audit.read', credential: 'reader' },
    ]);
  });
});
