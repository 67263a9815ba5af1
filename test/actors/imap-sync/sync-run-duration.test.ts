/**
 * `mailcairn.sync.run.duration`: one measurement per folder a run ends,
 * labelled with the account, the alias and the folder's outcome as the run
 * records it. The real SyncRun against a real Dovecot, driven in this
 * thread with the SDK in process (in the service it runs on the sync
 * actor's thread, whose measurements the telemetry SDK forwards to the main
 * thread: what that adds is tested with the SDK's thread provider).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openSession } from '../../../actors/imap-sync/connection.ts';
import { ImapSyncConfig, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { SyncRun } from '../../../actors/imap-sync/sync-run.ts';
import { loadConfig } from '../../../config/load.ts';
import { storeSlice } from '../../../config/store-slice.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openSlice } from '../../../runtime/store/open-slice.ts';
import { systemChildren } from '../../../service/system-children.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { type HistogramValue, installTelemetrySdk } from '../../helpers/telemetry-sdk.ts';

t.setTimeout(120_000);

t.test('each folder a run ends is one duration, by account, alias and outcome', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'hal', password: 'pw-hal' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'hal', 'INBOX', [...generateMailbox({ seed: 31, count: 12, profile: 'small' })]);

  const dir = tempDir(t);
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, 'pw-hal');
  const loaded = loadConfig({
    file: writeConfig(dir, {
      HealthEndpoints: { Port: 0 },
      Storage: { Database: join(dir, 'mailcairn.db') },
      Accounts: [
        {
          Id: 'hal',
          Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'hal', Password: `file:${passwordFile}` },
          Folders: [{ Alias: 'inbox' }, { Alias: 'gone', Path: 'No/Such/Folder' }],
        },
      ],
    }),
    env: {},
  });
  const config = ImapSyncConfig.parse(systemChildren(loaded).find((c) => c.id === syncActorId('hal'))!.config);
  const db = openSlice(storeSlice(loaded));
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(db, ['hal']);

  const sdk = installTelemetrySdk(t);
  const logs = captureLog();
  let session: Awaited<ReturnType<typeof openSession>> | null = null;
  t.teardown(() => session?.close());
  const run = new SyncRun({
    db,
    config,
    log: logs.log,
    async session() {
      session ??= await openSession(config, { pass: 'pw-hal' });
      return session;
    },
    derive: async () => ({ derived: 0, unreadable: [], missingRaw: 0 }),
    now: Date.now,
  });
  const started = Date.now();
  let summary = null;
  while (summary === null) summary = await run.step(0);
  const elapsed = (Date.now() - started) / 1000;
  t.equal(summary.outcome, 'partial', 'the inbox was mirrored, the unmapped folder failed');

  const points = (await sdk.pointsOf('mailcairn.sync.run.duration')).map((p) => ({ attributes: p.attributes, ...(p.value as HistogramValue) }));
  t.same(
    points
      .map((p): Record<string, unknown> => ({ ...p.attributes, count: p.count }))
      .sort((a, b) => String(a['mailcairn.folder']).localeCompare(String(b['mailcairn.folder']))),
    [
      { 'mailcairn.account': 'hal', 'mailcairn.folder': 'gone', 'mailcairn.outcome': 'no-such-folder', count: 1 },
      { 'mailcairn.account': 'hal', 'mailcairn.folder': 'inbox', 'mailcairn.outcome': 'ok', count: 1 },
    ],
    'one measurement per folder, its outcome as recorded',
  );
  const inbox = points.find((p) => p.attributes['mailcairn.folder'] === 'inbox')!;
  t.ok(inbox.sum > 0 && inbox.sum <= elapsed, `the inbox took ${inbox.sum} s, within the run's ${elapsed} s`);
  const gone = points.find((p) => p.attributes['mailcairn.folder'] === 'gone')!;
  t.equal(gone.sum, 0, 'a folder that matches none was never begun: no time of its own, though it came after the inbox');
});
