/**
 * The second check of the dead-letter use cases (docs/admin-api.md "The
 * pipeline", Permission), reached without the route filter: each refuses a
 * principal lacking its permission, and one under no principal, with
 * E_APP_REFUSED (14001); an unconfigured account, a foreign cursor and a
 * malformed job id are invalid requests; none of these reaches the query pool
 * or an actor. A job the pool does not find is JobUnknown without asking any
 * actor; one it finds is decided by its account's sync actor.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../../config/load.ts';
import { createCursors } from '../../../http/admin/cursor.ts';
import { DEAD_LETTERS_PATH, decideDeadLetter, listDeadLetters } from '../../../http/admin/use-cases/dead-letters.ts';
import type { Principal } from '../../../http/auth/principal.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';

const holding = (...permissions: string[]): Principal => ({ kind: 'caller', identity: 'someone', permissions: new Set(permissions) });
const refusal = (permission?: string) => ({ code: 'E_APP_REFUSED', publicCode: 14001, details: permission === undefined ? undefined : { permission } });

t.test('dead-letter use cases ask again', async (t) => {
  const dir = tempDir(t);
  const config = loadConfig({
    file: writeConfig(dir, {
      Storage: { Database: `${dir}/m.db` },
      Accounts: [{ Id: 'pat', Imap: { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'pat', Password: 'env:PW' }, Folders: [{ Alias: 'inbox' }] }],
    }),
    env: {},
  });
  const asked: Array<{ to: string; msg: { type: string } }> = [];
  let found: string | null = null;
  const queryPool = {
    id: 'mail-query',
    ask: async (msg: { type: string }) => {
      asked.push({ to: 'mail-query', msg });
      return (msg.type === 'mail-query.job' ? { account: found } : { jobs: [], next: null }) as never;
    },
  };
  const actor = (id: string) => ({
    id,
    ask: async (msg: { type: string }) => {
      asked.push({ to: id, msg });
      return { outcome: 'Accepted' } as never;
    },
  });
  const cursors = createCursors(randomBytes(32));
  const deps = { config, queryPool, actor, cursors } as never;
  const reader = holding('service.admin.read');
  const operator = holding('service.admin.operate');

  await t.rejects(listDeadLetters(deps, operator, { pageSize: 50 }, 1_000), refusal('service.admin.read'));
  await t.rejects(listDeadLetters(deps, null, { pageSize: 50 }, 1_000), refusal(undefined));
  await t.rejects(decideDeadLetter(deps, reader, { job: 'j1' }, 'retry', 1_000), refusal('service.admin.operate'));
  await t.rejects(decideDeadLetter(deps, reader, { job: 'j1' }, 'drop', 1_000), refusal('service.admin.operate'));
  await t.rejects(listDeadLetters(deps, reader, { account: 'nobody', pageSize: 50 }, 1_000), {
    code: 'E_HTTP_BAD_REQUEST',
    message: /configures no mail account named 'nobody'/,
  });
  const foreign = createCursors(randomBytes(32)).issue(DEAD_LETTERS_PATH, { type: undefined, account: undefined }, [1, 1]);
  await t.rejects(listDeadLetters(deps, reader, { pageSize: 50, cursor: foreign }, 1_000), {
    code: 'E_HTTP_BAD_REQUEST',
    message: /not issued by this deployment/,
  });
  await t.rejects(decideDeadLetter(deps, operator, { job: '42' }, 'retry', 1_000), { code: 'E_HTTP_BAD_REQUEST', message: /such as j42/ });
  t.same(asked, [], 'no refusal reached the pool or an actor');

  t.same(await listDeadLetters(deps, reader, { pageSize: 50 }, 1_000), { jobs: [] }, 'no nextCursor when nothing follows');
  t.same(await decideDeadLetter(deps, operator, { job: 'j7' }, 'retry', 1_000), { job: 'j7', outcome: 'JobUnknown' });
  t.same(
    asked.map((a) => a.to),
    ['mail-query', 'mail-query'],
    'an unknown job reaches no actor',
  );
  found = 'pat';
  t.same(await decideDeadLetter(deps, operator, { job: 'j7' }, 'drop', 1_000), { job: 'j7', outcome: 'Accepted' });
  t.same(asked.at(-1), { to: 'imap-sync:pat', msg: { type: 'imap-sync.job-decision', job: 7, decision: 'drop' } }, "the job's account's sync actor decides");
});
