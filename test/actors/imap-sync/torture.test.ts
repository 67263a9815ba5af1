/**
 * Every file of the MIME torture corpus goes through a real sync: each is
 * stored (parsed, or kept raw and counted unreadable), none crashes the
 * actor, and no log line carries a subject, address or body from it.
 */
import t from 'tap';
import { corpusAvailable, loadCorpus } from '../../harness/corpus.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

// Real servers and a whole mirror: generous on a loaded machine (CI shares two cores).
t.setTimeout(300_000);

t.test(
  'the whole MIME torture corpus is stored; nothing crashes; nothing private is logged',
  { skip: !corpusAvailable() && 'the shared corpus is not present' },
  async (t) => {
    const corpus = loadCorpus('mime-torture');
    t.ok(corpus.length > 100, `${corpus.length} torture messages`);
    const dovecot = await startDovecot({ users: [{ user: 'tess', password: 'pw-tess' }] });
    t.teardown(() => dovecot.stop());
    await writeMaildir(
      dovecot,
      'tess',
      'INBOX',
      corpus.map((c) => ({ raw: c.raw })),
    );
    const dir = tempDir(t);
    const sync = await startSyncService(dir, dovecot, [{ id: 'tess', user: 'tess', folders: [{ Alias: 'inbox' }] }], {
      MailSynchronization: { BatchSize: 40 },
    });
    t.teardown(() => sync.service.stop());
    let status = await sync.syncNow('tess', 120_000);
    for (let i = 0; i < 10 && status.accounts[0]?.folders[0]?.lastRun?.hasMoreEmails; i++) status = await sync.syncNow('tess', 120_000);

    const server = (await mailAdmin(dovecot).fetchAll('tess', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(sync.database, 'tess', 'inbox'), server, 'every message stored with its exact bytes');
    const states = mirrorStates(sync.database, 'tess', 'inbox');
    t.equal((states.stored ?? 0) + (states.unreadable ?? 0), corpus.length, `stored ${states.stored ?? 0}, unreadable ${states.unreadable ?? 0}`);
    t.equal(sync.logs.events('actor.exit').length, 0, 'no actor crashed');
    const logs = sync.logs.raw();
    const leaked = sensitiveStrings(corpus.map((c) => c.raw)).filter((s) => logs.includes(s));
    t.same(leaked, [], 'no subject or address from the corpus reached a log line');
  },
);
