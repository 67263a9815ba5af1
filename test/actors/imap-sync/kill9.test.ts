/**
 * Crash safety: the whole mailcairnd process is killed with SIGKILL at more
 * than twenty random moments during an initial mirror, and restarted each
 * time. The raw MIME of a batch and the checkpoint advance commit together,
 * so the final mirror must equal the server: the same UIDs, flags and
 * content hashes, nothing missing and nothing twice. The derivation writer
 * is killed with it, mid-segment as often as not: every stored message ends
 * derived, with exactly one search document, indexed once.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { seededRandom } from '../../../runtime/clock.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { indexState, readMirror, storedCount } from '../../helpers/mirror.ts';

// Spawning and killing real processes takes minutes on a small machine.
t.setTimeout(900_000);

// Large enough that 22 short incarnations do not finish the mirror on a quiet machine.
const TOTAL = 5_000;
const KILLS = 22;

t.test(`SIGKILL at ${KILLS} random moments of an initial mirror: the final mirror equals the server`, { timeout: 600_000 }, async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'kim', password: 'pw-kim' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'kim', 'INBOX', generateMailbox({ seed: 9, count: TOTAL, profile: 'small' }));
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  writeFileSync(join(dir, 'pw'), 'pw-kim');
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    MailSynchronization: { BatchSize: 25, Interval: '00:00:10' },
    Accounts: [
      {
        Id: 'kim',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'kim', Password: `file:${join(dir, 'pw')}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const random = seededRandom(20261123);
  const progress: number[] = [];
  const underivedAtKill: number[] = [];
  for (let kill = 0; kill < KILLS; kill++) {
    const before = storedCount(database);
    const daemon = spawnDaemon(['--config', config]);
    // Wait until this incarnation has stored something, then kill it a random moment later.
    const deadline = Date.now() + 30_000;
    while (storedCount(database) <= before && Date.now() < deadline && daemon.child.exitCode === null) await new Promise((r) => setTimeout(r, 25));
    // Short enough that an incarnation rarely mirrors more than a few batches on a quiet machine: every kill must land mid-mirror.
    await new Promise((r) => setTimeout(r, Math.floor(random.next() * 120)));
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    progress.push(storedCount(database));
    underivedAtKill.push(indexState(database).underived);
    t.comment(`kill ${kill}: ${progress.at(-1)} stored, ${underivedAtKill.at(-1)} not derived yet`);
  }
  t.ok(progress.at(-1)! < TOTAL, `every kill landed during the initial mirror (stored after each kill: ${progress.join(', ')})`);
  t.ok(
    progress.every((n, i) => i === 0 || n >= progress[i - 1]!),
    'progress was never lost',
  );
  t.ok(
    underivedAtKill.some((n) => n > 0),
    `some kills caught the derivation writer with stored mail still to derive (${underivedAtKill.join(', ')})`,
  );

  const final = spawnDaemon(['--config', config]);
  t.teardown(() => void final.child.kill('SIGKILL'));
  const deadline = Date.now() + 120_000;
  const settled = (): boolean => {
    const index = indexState(database);
    return index.withRaw === TOTAL && index.underived === 0;
  };
  while (!settled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  // SIGTERM is the daemon's to handle once it is up; before that it would simply end the process.
  while (!final.lines().some((line) => line.event === 'service.ready') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  final.child.kill('SIGTERM');
  t.equal((await final.exited).code, 0);

  const server = (await mailAdmin(dovecot).fetchAll('kim', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
  const mirror = readMirror(database, 'kim', 'inbox');
  t.equal(mirror.length, TOTAL, 'nothing missing, nothing twice');
  t.same(mirror, server, 'same UIDs, flags and content hashes as the server');
  const index = indexState(database);
  t.same(
    { underived: index.underived, documents: index.documents, keys: index.keys, strayDocuments: index.strayDocuments, strayPassages: index.strayPassages },
    { underived: 0, documents: index.stored, keys: index.stored, strayDocuments: 0, strayPassages: 0 },
    'every message derived once: one search document and one index key each, no passage without its document',
  );
  t.ok(index.stored > TOTAL * 0.9, `most of the mailbox is readable mail (${index.stored} of ${TOTAL})`);
  t.ok(index.ftsConsistent, 'the full-text index agrees with its documents');
});
