/**
 * Rewind, re-derivation and folder erasure through the administrative
 * listener of a service started for real (a private Dovecot behind one
 * account):
 * - each route's 403 problem document (exactly status, detail, permission)
 *   to a credential lacking its permission, its 400 sentences (nothing the
 *   caller wrote is repeated but an account or alias) and its 413 past 4 KB;
 * - rewind: the GET's estimate is what the next run fetches again (the
 *   folder's last run reports that many stored), nothing is fetched twice,
 *   a second rewind of the same scope finds no progress to discard;
 * - re-derivation: a run over more messages than one segment (200) ends
 *   with every stored message re-read; asking while it is under way
 *   returns it (`started: false`); a scope never asked about is `run: null`;
 * - erasure: refused while the folder is mirrored (nothing erased); after a
 *   restart without its mapping, passes of at most 250 erase everything
 *   stored for it, and a pass after the last erases nothing;
 * - no subject or address of the mail reaches a log line.
 */
import { randomUUID } from 'node:crypto';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { generateMailbox, type GeneratedMessage } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { adminCall, adminEndpointSection, query, type AdminAnswer } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(420_000);

const KEY_OPERATOR = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READER = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_NOTHING = `mc_${randomUUID().replaceAll('-', '')}`;

type Folder = { Alias: string; Path?: string };
type Started = { sync: SyncService; api: string };

async function start(t: Test, dir: string, dovecot: Dovecot, folders: Folder[]): Promise<Started> {
  const sync = await startSyncService(dir, dovecot, [{ id: 'olga', user: 'olga', folders }], {
    AdminEndpoint: adminEndpointSection(dir, 0, { operator: KEY_OPERATOR, reader: KEY_READER, nothing: KEY_NOTHING }, 1_000),
  });
  t.teardown(() => sync.service.stop());
  return { sync, api: `http://127.0.0.1:${sync.service.admin!.port}/api/admin` };
}

/** Messages of the account by state, across every folder (tombstones included). */
function countByState(database: string): Record<string, number> {
  const db = new Libsql(database, { readonly: true });
  try {
    const rows = db.prepare("SELECT state, count(*) AS n FROM messages WHERE account_id = 'olga' GROUP BY state").all() as Array<{ state: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  } finally {
    db.close();
  }
}

function problemOf(t: Test, answer: AdminAnswer, status: number, what: string): Record<string, unknown> {
  t.equal(answer.status, status, what);
  t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
  return answer.json();
}

t.test('rewind, re-derivation and folder erasure over HTTP', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'olga', password: 'pw-olga' }] });
  t.teardown(() => dovecot.stop());
  // More than one re-derivation segment (200) in the whole account, and more than one erasure pass (250) in Old.
  const inbox = [...generateMailbox({ seed: 11, count: 230, profile: 'small' })];
  const small = [...generateMailbox({ seed: 12, count: 30, profile: 'small' })];
  const old = [...generateMailbox({ seed: 13, count: 260, profile: 'small' })];
  await writeMaildir(dovecot, 'olga', 'INBOX', inbox);
  await writeMaildir(dovecot, 'olga', 'Small', small);
  await writeMaildir(dovecot, 'olga', 'Old', old);
  const dir = tempDir(t);
  const mapped: Folder[] = [{ Alias: 'inbox' }, { Alias: 'small', Path: 'Small' }, { Alias: 'old', Path: 'Old' }];
  let { sync, api } = await start(t, dir, dovecot, mapped);
  await sync.syncNow('olga', 120_000);
  t.same(
    [readMirror(sync.database, 'olga', 'inbox').length, readMirror(sync.database, 'olga', 'small').length, readMirror(sync.database, 'olga', 'old').length],
    [230, 30, 260],
  );
  const held = countByState(sync.database);
  const heldCount = (held.stored ?? 0) + (held.unreadable ?? 0);

  const operator = (path: string, options: { method?: 'GET' | 'POST'; json?: unknown; body?: string } = {}) =>
    adminCall(`${api}${path}`, { apiKey: KEY_OPERATOR, ...options });

  await t.test('403 to a credential lacking the route permission', async (t) => {
    const routes: Array<{ method: 'GET' | 'POST'; path: string; permission: string; json?: unknown }> = [
      { method: 'GET', path: '/mailbox/rewind?account=olga', permission: 'service.admin.read' },
      { method: 'POST', path: '/mailbox/rewind', permission: 'service.admin.operate', json: { account: 'olga', folder: 'small' } },
      { method: 'POST', path: '/mailbox/rederivation', permission: 'service.admin.operate', json: { account: 'olga' } },
      { method: 'GET', path: '/mailbox/rederivation?account=olga', permission: 'service.admin.read' },
      { method: 'POST', path: '/folders/erasure', permission: 'service.admin.erase', json: { account: 'olga', folder: 'gone' } },
    ];
    for (const route of routes) {
      for (const key of route.permission === 'service.admin.read' ? [KEY_NOTHING] : [KEY_NOTHING, KEY_READER]) {
        const answer = await adminCall(`${api}${route.path}`, { method: route.method, apiKey: key, ...(route.json ? { json: route.json } : {}) });
        t.same(problemOf(t, answer, 403, `${route.method} ${route.path}`), {
          status: 403,
          detail: `The credential does not hold the permission ${route.permission}.`,
          permission: route.permission,
        });
      }
    }
    t.equal(sync.logs.events('auth.refused').length, 8, 'each refusal counted once');
    t.same(countByState(sync.database), held, 'no refused request changed anything');
  });

  await t.test('400: a sentence naming what to change, repeating nothing sent but identifiers', async (t) => {
    const secretish = 'Privé <olga@example.org>/Taxes';
    const cases: Array<[string, { method?: 'GET' | 'POST'; json?: unknown }, RegExp]> = [
      ['/mailbox/rewind', {}, /^Name the account in account/],
      ['/mailbox/rewind?account=nobody', {}, /^The deployment configures no mail account named 'nobody'; name one of the configured Accounts:Id values\.$/],
      [
        `/mailbox/rewind${query({ account: 'olga', folder: secretish })}`,
        {},
        /^Send folder as a folder alias \(1 to 63 lower-case letters, digits, - or _, starting with a letter or digit\), or leave it out for every folder\.$/,
      ],
      ['/mailbox/rewind?account=olga&scope=all', {}, /^Leave out the query parameter scope; this route does not take it\.$/],
      ['/mailbox/rewind?account=olga&account=pat', {}, /^Name each query parameter once\.$/],
      ['/mailbox/rewind', { json: { account: 'olga', folder: secretish } }, /^Send folder as a folder alias/],
      ['/mailbox/rewind', { json: { account: 'olga', scope: 'all' } }, /^Leave out the member scope; this route does not take it\.$/],
      ['/mailbox/rewind', { json: { account: 'nobody' } }, /configures no mail account named 'nobody'/],
      ['/mailbox/rederivation', { json: { folder: 'inbox' } }, /^Name the account in account/],
      ['/mailbox/rederivation', { json: { account: 'olga', folder: 7 } }, /^Send folder as a folder alias/],
      ['/mailbox/rederivation', { json: { account: secretish } }, /configures no mail account named by that name/],
      [`/mailbox/rederivation${query({ account: 'olga', folder: 'INBOX' })}`, {}, /^Send folder as a folder alias/],
      ['/mailbox/rederivation?account=nobody', {}, /configures no mail account named 'nobody'/],
      ['/folders/erasure', { json: { account: 'olga' } }, /^Name the folder alias to erase in folder\.$/],
      ['/folders/erasure', { json: { account: 'olga', folder: '  ' } }, /^Name the folder alias to erase in folder\.$/],
      [
        '/folders/erasure',
        { json: { account: 'olga', folder: secretish } },
        /^Send folder as a folder alias \(1 to 63 lower-case letters, digits, - or _, starting with a letter or digit\)\.$/,
      ],
      ['/folders/erasure', { json: { account: 'nobody', folder: 'old' } }, /configures no mail account named 'nobody'/],
      ['/folders/erasure', { json: { account: 'olga', folder: 'old', force: true } }, /^Leave out the member force/],
    ];
    for (const [path, options, detail] of cases) {
      const what = `${options.json ? 'POST' : 'GET'} ${path.split('?')[0]} ${JSON.stringify(options.json ?? path.split('?')[1] ?? '')}`;
      const answer = await operator(path, options);
      const problem = problemOf(t, answer, 400, what);
      t.same(Object.keys(problem).sort(), ['detail', 'status', 'title'], `${what}: status, title, detail`);
      t.match(problem.detail, detail, what);
      t.notOk(answer.body.includes('Priv') || answer.body.includes('example.org'), `${what}: nothing sent is repeated`);
    }
    for (const path of ['/mailbox/rewind', '/mailbox/rederivation', '/folders/erasure']) {
      const answer = await operator(path, { json: { account: 'olga', folder: 'x'.repeat(4 * 1024) } });
      t.match(problemOf(t, answer, 413, `${path} past 4 KB`), { status: 413, detail: 'Send a body of at most 4096 bytes.' });
    }
    t.same(countByState(sync.database), held, 'no refused request changed anything');
  });

  await t.test('re-derivation across segments', async (t) => {
    t.same(
      (await operator('/mailbox/rederivation?account=olga&folder=old')).json(),
      { started: false, carriage: null, run: null },
      'a scope never asked about has no run',
    );
    // Two requests at once: one starts the run, the other is answered the run under way.
    const [first, second] = await Promise.all([
      operator('/mailbox/rederivation', { json: { account: 'olga' } }),
      operator('/mailbox/rederivation', { json: { account: 'olga', folder: '' } }),
    ]);
    t.equal(first!.status, 200);
    t.equal(second!.status, 200);
    const answers = [first!.json(), second!.json()];
    t.same(answers.map((a) => a.started).sort(), [false, true], 'one started it, the other found it under way');
    t.equal(answers[0].run.requestedAt, answers[1].run.requestedAt, 'the same run');
    t.match(answers[0], { carriage: 'carried', run: { account: 'olga', folder: null, isOutstanding: true, endedAt: null } });

    let run: {
      isOutstanding: boolean;
      rederivedEmailCount: number;
      unreadableEmailCount: number;
      missingContentEmailCount: number;
      endedAt: string | null;
    } | null = null;
    let pending = false;
    await until(
      () => {
        if (!pending) {
          pending = true;
          operator('/mailbox/rederivation?account=olga').then(
            (a) => {
              run = a.json().run;
              pending = false;
            },
            () => {
              pending = false;
            },
          );
        }
        return run !== null && !run.isOutstanding;
      },
      120_000,
      'the re-derivation run to end',
    );
    t.ok(run!.rederivedEmailCount > 200, `carried across segments (${run!.rederivedEmailCount} re-read)`);
    t.equal(run!.rederivedEmailCount + run!.unreadableEmailCount + run!.missingContentEmailCount, heldCount, 'every message held with raw MIME was re-read');
    t.equal(run!.missingContentEmailCount, 0);
    t.ok(run!.endedAt !== null);
    const status = (await operator('/mailbox/rederivation?account=olga&folder=%20')).json();
    t.match(status, { started: false, carriage: 'carried', run: { folder: null, isOutstanding: false } }, 'a blank folder reads the whole account');
    t.same(countByState(sync.database), held, 're-derivation keeps every message in its state');
  });

  await t.test('rewind: the estimate is what the next run fetches again', async (t) => {
    t.same(
      (await operator('/mailbox/rewind?account=olga&folder=never')).json(),
      { account: 'olga', folder: 'never', storedEmailCount: 0 },
      'an alias with no binding holds nothing',
    );
    t.same((await operator('/mailbox/rewind?account=olga&folder=')).json(), { account: 'olga', folder: null, storedEmailCount: 520 }, 'blank: every folder');
    const estimate = await adminCall(`${api}/mailbox/rewind?account=olga&folder=small`, { apiKey: KEY_READER });
    t.equal(estimate.status, 200, 'read is enough to estimate');
    t.same(estimate.json(), { account: 'olga', folder: 'small', storedEmailCount: 30 });

    const rewound = await operator('/mailbox/rewind', { json: { account: 'olga', folder: 'small' } });
    t.equal(rewound.status, 200);
    t.same(rewound.json(), { account: 'olga', folder: 'small', folders: ['small'] });
    t.same(
      (await operator('/mailbox/rewind', { json: { account: 'olga', folder: 'small' } })).json(),
      { account: 'olga', folder: 'small', folders: [] },
      'no progress left to discard',
    );
    t.same((await operator('/mailbox/rewind?account=olga&folder=small')).json().storedEmailCount, 30, 'a rewind erases no mail');
    t.same((await operator('/mailbox/rewind', { json: { account: 'olga', folder: 'never' } })).json(), { account: 'olga', folder: 'never', folders: [] });

    const after = await sync.syncNow('olga', 120_000);
    const folders = after.accounts.find((a) => a.account === 'olga')!.folders;
    t.equal(folders.find((f) => f.alias === 'small')?.lastRun?.storedEmailCount, 30, 'the next run fetched again as many as estimated');
    t.equal(folders.find((f) => f.alias === 'inbox')?.lastRun?.storedEmailCount, 0, 'folders outside the scope fetched nothing');
    const server = (await mailAdmin(dovecot).fetchAll('olga', 'Small')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(sync.database, 'olga', 'small'), server, 'the mirror equals the server, nothing twice');
  });

  await t.test('erasure is refused while the folder is mirrored', async (t) => {
    const refused = await operator('/folders/erasure', { json: { account: 'olga', folder: 'old' } });
    t.same(problemOf(t, refused, 400, 'a mirrored folder'), {
      status: 400,
      title: 'Invalid request',
      detail: 'The folder old of account olga is still mirrored; remove it from Accounts:0:Folders and restart, then erase it.',
    });
    t.equal(readMirror(sync.database, 'olga', 'old').length, 260, 'nothing erased');
    t.same(
      (await operator('/folders/erasure', { json: { account: 'olga', folder: 'never' } })).json(),
      { account: 'olga', folder: 'never', erasedEmailCount: 0, emailsRemain: false, remainingEmailCount: 0 },
      'an alias no mapping names is accepted and holds nothing',
    );
  });

  const raws = [...inbox, ...small, ...old].map((m: GeneratedMessage) => m.raw);
  const leaked = (logs: string) => sensitiveStrings(raws).filter((s) => logs.includes(s));
  t.same(leaked(sync.logs.raw()), [], 'no subject or address in any log line');
  await sync.service.stop();

  // The operator withdraws the mapping and restarts: the folder's mail can now be erased, pass by pass.
  ({ sync, api } = await start(
    t,
    dir,
    dovecot,
    mapped.filter((f) => f.Alias !== 'old'),
  ));
  const stored = readMirror(sync.database, 'olga', 'old').length;
  const passes: Array<{ erasedEmailCount: number; emailsRemain: boolean; remainingEmailCount: number }> = [];
  for (let i = 0; i < 10; i++) {
    const pass = await operator('/folders/erasure', { json: { account: 'olga', folder: 'old' } });
    t.equal(pass.status, 200);
    const answer = pass.json();
    t.match(answer, { account: 'olga', folder: 'old' });
    passes.push({ erasedEmailCount: answer.erasedEmailCount, emailsRemain: answer.emailsRemain, remainingEmailCount: answer.remainingEmailCount });
    if (!answer.emailsRemain) break;
  }
  t.same(
    passes,
    [
      { erasedEmailCount: 250, emailsRemain: true, remainingEmailCount: 10 },
      { erasedEmailCount: 10, emailsRemain: false, remainingEmailCount: 0 },
    ],
    'bounded passes of at most 250, each saying how many remain',
  );
  t.equal(
    passes.reduce((n, p) => n + p.erasedEmailCount, 0),
    stored,
    'the passes erased everything stored for the folder',
  );
  t.same(
    (await operator('/folders/erasure', { json: { account: 'olga', folder: 'old' } })).json(),
    { account: 'olga', folder: 'old', erasedEmailCount: 0, emailsRemain: false, remainingEmailCount: 0 },
    'a further pass erases nothing',
  );
  t.same(mirrorStates(sync.database, 'olga', 'old'), {}, 'nothing of the folder is left');
  t.equal(readMirror(sync.database, 'olga', 'inbox').length, 230, 'other folders untouched');
  t.same(leaked(sync.logs.raw()), [], 'no subject or address in any log line after the restart');
});
