/**
 * The second check of the maintenance and audit use cases (docs/admin-api.md
 * "The pipeline", Permission), reached without the route filter: each refuses
 * a principal lacking its own permission, and one reached under no principal,
 * with E_APP_REFUSED (14001) naming the permission; the scope's refusals
 * (unconfigured account, folder text that is not an alias, an empty audit
 * range, a foreign cursor, a cursor of the other audit page) are invalid
 * requests; the erasure of a folder the account still mirrors is refused with
 * the sentence the client matches, whether the configuration or the sync actor
 * finds it mirrored. None of the refusals reaches an actor or the query pool.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../../config/load.ts';
import { createCursors } from '../../../http/admin/cursor.ts';
import { eraseFolderPass } from '../../../http/admin/use-cases/folder-erasure.ts';
import { ANSWERING_AUDIT_PATH, answeringAudit } from '../../../http/admin/use-cases/answering-audit.ts';
import { EMPTY_RANGE } from '../../../http/admin/use-cases/audit-page.ts';
import { MUTATION_AUDIT_PATH, mutationAudit } from '../../../http/admin/use-cases/mutation-audit.ts';
import { rederivationStatus, requestRederivation } from '../../../http/admin/use-cases/rederivation.ts';
import { rewind, rewindAssessment } from '../../../http/admin/use-cases/rewind.ts';
import type { Principal } from '../../../http/auth/principal.ts';
import { AppError } from '../../../runtime/errors.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';

const ALL = [
  'service.admin.read',
  'service.admin.audit.read',
  'service.admin.operate',
  'service.admin.credentials.write',
  'service.admin.spend',
  'service.admin.erase',
];
const holding = (...permissions: string[]): Principal => ({ kind: 'caller', identity: 'someone', permissions: new Set(permissions) });
const refusal = (permission?: string) => ({ code: 'E_APP_REFUSED', publicCode: 14001, details: permission === undefined ? undefined : { permission } });

t.test('maintenance and audit use cases ask again', async (t) => {
  const dir = tempDir(t);
  const config = loadConfig({
    file: writeConfig(dir, {
      Storage: { Database: `${dir}/m.db` },
      Accounts: [
        { Id: 'pat', Imap: { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'pat', Password: 'env:PW' }, Folders: [{ Alias: 'inbox' }] },
        {
          Id: 'sam',
          Imap: { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'sam', Password: 'env:PW' },
          Folders: [{ Alias: 'inbox' }, { Alias: 'old' }],
        },
      ],
    }),
    env: {},
  });
  const asked: unknown[] = [];
  let actorAnswer: () => unknown = () => ({});
  const actor = (id: string) => ({
    id,
    ask: async (msg: unknown) => {
      asked.push(msg);
      return actorAnswer() as never;
    },
  });
  const queryPool = {
    id: 'mail-query',
    ask: async (msg: unknown) => {
      asked.push(msg);
      return { entries: [], omittedCount: 0, next: null } as never;
    },
  };
  const logs = captureLog();
  const cursors = createCursors(randomBytes(32));
  const deps = { config, actor, queryPool, cursors, log: logs.log };
  const scope = { account: 'pat', folder: 'inbox' };
  const audit = { account: 'pat', pageSize: 50 };

  // Each use case refuses a principal holding every permission but its own, and no principal at all.
  const cases: Array<[string, (p: Principal | null) => Promise<unknown>]> = [
    ['service.admin.read', (p) => rewindAssessment(deps, p, scope, 1_000)],
    ['service.admin.operate', (p) => rewind(deps, p, scope, 1_000)],
    ['service.admin.operate', (p) => requestRederivation(deps, p, scope, 1_000)],
    ['service.admin.read', (p) => rederivationStatus(deps, p, scope, 1_000)],
    ['service.admin.erase', (p) => eraseFolderPass(deps, p, { account: 'pat', folder: 'gone' }, 1_000)],
    ['service.admin.audit.read', (p) => mutationAudit(deps, p, audit, 1_000)],
    ['service.admin.audit.read', (p) => answeringAudit(deps, p, audit, 1_000)],
  ];
  for (const [permission, call] of cases) {
    await t.rejects(call(holding(...ALL.filter((p) => p !== permission))), refusal(permission), `refused without ${permission}`);
    await t.rejects(call(null), refusal(undefined), 'refused under no principal');
  }

  // Invalid requests, before anything is asked.
  const everything = holding(...ALL);
  const invalid = (message: RegExp) => ({ code: 'E_HTTP_BAD_REQUEST', message });
  await t.rejects(rewindAssessment(deps, everything, { account: 'nobody' }, 1_000), invalid(/configures no mail account named 'nobody'/));
  await t.rejects(rewind(deps, everything, { account: 'pat', folder: 'INBOX/Sub' }, 1_000), invalid(/^Send folder as a folder alias .*or leave it out/));
  await t.rejects(requestRederivation(deps, everything, { account: 'pat', folder: 'a b' }, 1_000), invalid(/^Send folder as a folder alias/));
  await t.rejects(eraseFolderPass(deps, everything, { account: 'pat', folder: '  ' }, 1_000), invalid(/^Name the folder alias to erase in folder/));
  await t.rejects(eraseFolderPass(deps, everything, { account: 'pat', folder: 'Old Stuff' }, 1_000), invalid(/^Send folder as a folder alias/));
  await t.rejects(
    mutationAudit(deps, everything, { ...audit, from: 2_000, before: 2_000 }, 1_000),
    invalid(new RegExp(`^${EMPTY_RANGE.replace(/[.()]/g, '\\$&')}$`)),
  );
  await t.rejects(mutationAudit(deps, everything, { ...audit, from: 2_000, before: 1_000 }, 1_000), invalid(/range ends where it begins or earlier/));
  const foreign = createCursors(randomBytes(32)).issue(MUTATION_AUDIT_PATH, { account: 'pat' }, [1, 1]);
  await t.rejects(mutationAudit(deps, everything, { ...audit, cursor: foreign }, 1_000), invalid(/not issued by this deployment/));
  await t.rejects(answeringAudit(deps, everything, { ...audit, account: 'nobody' }, 1_000), invalid(/configures no mail account named 'nobody'/));
  await t.rejects(answeringAudit(deps, everything, { ...audit, from: 2_000, before: 2_000 }, 1_000), invalid(/range ends where it begins or earlier/));
  await t.rejects(answeringAudit(deps, everything, { ...audit, cursor: foreign }, 1_000), invalid(/not issued by this deployment for this page/));
  const answering = cursors.issue(ANSWERING_AUDIT_PATH, { account: 'pat' }, [1, 1]);
  await t.rejects(mutationAudit(deps, everything, { ...audit, cursor: answering }, 1_000), invalid(/not issued by this deployment for this page/));
  await t.rejects(
    answeringAudit(deps, everything, { ...audit, cursor: cursors.issue(ANSWERING_AUDIT_PATH, { account: 'pat' }, [1, 0]) }, 1_000),
    invalid(/not issued/),
  );

  // A folder the configuration still maps: refused naming it and the setting, without asking the actor.
  const mirrored = invalid(/^The folder old of account sam is still mirrored; remove it from Accounts:1:Folders and restart, then erase it\.$/);
  await t.rejects(eraseFolderPass(deps, everything, { account: 'sam', folder: 'old' }, 1_000), mirrored);
  t.same(asked, [], 'no refusal reached an actor or the pool');

  // The sync actor's own refusal (its binding is still mirrored) is the same 400.
  actorAnswer = () => {
    throw new AppError('E_SYNC_FOLDER_MIRRORED', { details: { account: 'pat', folder: 'gone' } });
  };
  await t.rejects(
    eraseFolderPass(deps, everything, { account: 'pat', folder: 'gone' }, 1_000),
    invalid(/^The folder gone of account pat is still mirrored; remove it from Accounts:0:Folders and restart, then erase it\.$/),
  );
  t.match(asked, [{ type: 'imap-sync.erase-pass', folder: 'gone', limit: 250 }], 'one bounded pass asked for');

  // Blank folder is the whole account; answers pass through.
  asked.length = 0;
  actorAnswer = () => ({ run: null });
  t.same(await rederivationStatus(deps, everything, { account: 'pat', folder: ' ' }, 1_000), { started: false, carriage: null, run: null });
  t.same(asked, [{ type: 'imap-sync.rederivation', folder: null }], 'a blank folder is an omission');
});
