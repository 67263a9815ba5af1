/**
 * The second check of the administrative use cases (docs/admin-api.md "The
 * pipeline", Permission): reached without the route filter, a use case still
 * refuses a principal lacking the permission, and one reached under no
 * principal at all, with E_APP_REFUSED (14001) carrying the permission; an
 * unconfigured account is an invalid request; no key ring is
 * E_KEYRING_MISSING; none of them reaches an actor.
 */
import t from 'tap';
import { loadConfig } from '../../../config/load.ts';
import { writeConfig, tempDir } from '../../helpers/daemon.ts';
import { storeRefreshToken } from '../../../http/admin/use-cases/refresh-token.ts';
import { sessionReport } from '../../../http/admin/use-cases/session.ts';
import { synchronizationStatus } from '../../../http/admin/use-cases/synchronization.ts';
import type { Principal } from '../../../http/auth/principal.ts';

t.test('use cases ask again', async (t) => {
  const dir = tempDir(t);
  const config = loadConfig({
    file: writeConfig(dir, {
      Storage: { Database: `${dir}/m.db` },
      Accounts: [{ Id: 'pat', Imap: { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'pat', Password: 'env:PW' }, Folders: [{ Alias: 'inbox' }] }],
    }),
    env: {},
  });
  const asked: unknown[] = [];
  const deps = {
    config,
    actor: (id: string) => ({
      id,
      ask: async (msg: unknown) => {
        asked.push(msg);
        return { stored: true } as never;
      },
    }),
  };
  const reader: Principal = { kind: 'caller', identity: 'reader', permissions: new Set(['service.admin.read']) };
  const writer: Principal = { kind: 'caller', identity: 'writer', permissions: new Set(['service.admin.credentials.write']) };

  const refusal = (permission?: string) => ({ code: 'E_APP_REFUSED', publicCode: 14001, details: permission === undefined ? undefined : { permission } });
  await t.rejects(storeRefreshToken(deps, reader, { account: 'pat', refreshToken: 'r' }, 1_000), refusal('service.admin.credentials.write'));
  await t.rejects(synchronizationStatus(deps, writer, 1_000), refusal('service.admin.read'));
  await t.rejects(synchronizationStatus(deps, null, 1_000), refusal(undefined), 'no principal at all');
  t.throws(() => sessionReport('1.2.3', null), refusal(undefined));
  t.same(sessionReport('1.2.3', reader), { service: 'mailcairn', version: '1.2.3', credential: 'reader', permissions: ['service.admin.read'] });

  await t.rejects(storeRefreshToken(deps, writer, { account: 'nobody', refreshToken: 'r' }, 1_000), {
    code: 'E_HTTP_BAD_REQUEST',
    message: /configures no mail account named 'nobody'/,
  });
  await t.rejects(storeRefreshToken(deps, writer, { account: 'pat', refreshToken: 'r' }, 1_000), { code: 'E_KEYRING_MISSING' }, 'no key ring: nothing asked');
  t.same(asked, [], 'no refusal reached an actor');
});
