/**
 * The account's maintenance operations through its sync actor, against a
 * real Dovecot: IDLE starting a run within seconds, re-derivation from
 * stored raw MIME (never the server), rewind (progress discarded, mail
 * kept, refetched without duplicates), and folder erasure of a folder the
 * account no longer mirrors, in bounded passes.
 */
import t from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { appendMessages, writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

function message(i: number): string {
  return [
    `From: M ${i} <m${i}@example.com>`,
    'To: Ops <ops@example.com>',
    `Subject: Maintenance ${i}`,
    `Message-ID: <x${i}@example.com>`,
    '',
    `Text ${i}`,
    '',
  ].join('\r\n');
}

t.test('IDLE, re-derivation, rewind and folder erasure', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'olga', password: 'pw-olga' }] });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await admin.createMailbox('olga', 'Old');
  // More than one re-derivation segment (200), so a second ask finds the run under way.
  await writeMaildir(dovecot, 'olga', 'INBOX', generateMailbox({ seed: 3, count: 230, profile: 'small' }));
  await appendMessages(
    dovecot,
    'olga',
    'Old',
    Array.from({ length: 25 }, (_, i) => ({ raw: message(100 + i) })),
  );
  const dir = tempDir(t);
  const folders = [{ Alias: 'inbox' }, { Alias: 'old', Path: 'Old' }];
  let sync = await startSyncService(dir, dovecot, [{ id: 'olga', user: 'olga', folders }]);
  await sync.syncNow('olga');
  t.equal(readMirror(sync.database, 'olga', 'old').length, 25);

  // New mail while the actor watches: a run starts by itself, long before the ten-minute interval.
  await appendMessages(dovecot, 'olga', 'INBOX', [{ raw: message(31) }]);
  await until(() => readMirror(sync.database, 'olga', 'inbox').length === 231, 15_000, 'IDLE to bring the new message in');
  t.pass('new mail arrived within seconds through IDLE');

  const actor = sync.service.supervisor.ref('imap-sync:olga');
  // Both asks reach the actor before its first segment: the second finds the run under way.
  const [started, again] = (await Promise.all([
    actor.ask({ type: 'imap-sync.rederive', folder: null }),
    actor.ask({ type: 'imap-sync.rederive', folder: null }),
  ])) as Array<{ started: boolean; carriage: string; run: { isOutstanding: boolean } }>;
  t.match(started, { started: true, carriage: 'carried', run: { isOutstanding: true } });
  t.equal(again!.started, false, 'asking again returns the run under way');
  let run: { isOutstanding: boolean; rederivedEmailCount: number } | null = null;
  await until(
    () => {
      actor.ask({ type: 'imap-sync.rederivation', folder: null }).then(
        (r) => (run = (r as { run: typeof run }).run),
        () => {},
      );
      return run !== null && !run.isOutstanding;
    },
    20_000,
    're-derivation to end',
  );
  t.equal(run!.rederivedEmailCount, 256, 'every stored message re-read from its raw MIME');
  t.same(await actor.ask({ type: 'imap-sync.rederivation', folder: 'never-asked' }), { run: null }, 'a scope never asked about has no run');

  const assessment = (await actor.ask({ type: 'imap-sync.rewind-assessment', folder: 'inbox' })) as { storedEmailCount: number };
  t.equal(assessment.storedEmailCount, 231);
  const rewound = (await actor.ask({ type: 'imap-sync.rewind', folder: 'inbox' })) as { folders: string[] };
  t.same(rewound.folders, ['inbox']);
  await sync.syncNow('olga');
  const server = (await admin.fetchAll('olga', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
  t.same(readMirror(sync.database, 'olga', 'inbox'), server, 'refetched after the rewind, nothing twice');

  const refused = await actor.ask({ type: 'imap-sync.erase-pass', folder: 'old', limit: 10 }).catch((e: unknown) => e);
  t.ok(refused instanceof AppError && refused.code === 'E_SYNC_FOLDER_MIRRORED', 'a still-mirrored folder is not erased');
  await sync.service.stop();

  // The operator withdraws the mapping; the folder's mail can now be erased, in bounded passes.
  sync = await startSyncService(dir, dovecot, [{ id: 'olga', user: 'olga', folders: [{ Alias: 'inbox' }] }]);
  t.teardown(() => sync.service.stop());
  const status = await sync.status();
  t.match(
    status.accounts[0]?.folders.find((f) => f.alias === 'old'),
    { mirrored: false },
    'a mapped folder no longer mirrored is listed and marked',
  );
  const eraser = sync.service.supervisor.ref('imap-sync:olga');
  const passes: Array<{ erasedEmailCount: number; emailsRemain: boolean }> = [];
  for (let i = 0; i < 10; i++) {
    const pass = (await eraser.ask({ type: 'imap-sync.erase-pass', folder: 'old', limit: 10 })) as { erasedEmailCount: number; emailsRemain: boolean };
    passes.push(pass);
    if (!pass.emailsRemain) break;
  }
  t.same(
    passes.map((p) => p.erasedEmailCount),
    [10, 10, 5],
  );
  t.same(mirrorStates(sync.database, 'olga', 'old'), {}, 'nothing of the folder is left');
  t.equal(readMirror(sync.database, 'olga', 'inbox').length, 231, 'other folders untouched');
});
