/**
 * Crash safety of the sync: the whole mailcairnd process is killed with
 * SIGKILL at random moments, and restarted each time, in two phases.
 *
 * Initial mirror (17 kills): a 5,000-message INBOX is mirrored for the
 * first time. The raw MIME of a batch and the checkpoint advance commit
 * together, so the mirror must end equal to the server. The derivation
 * writer is killed with it, mid-segment as often as not: every stored
 * message ends derived, with exactly one search document, indexed once.
 *
 * Incremental (10 kills): before each restart the server changes behind the
 * mirror's back: 100 new messages, flags and keywords added to and removed
 * from 300 mirrored ones, 5 expunged. Each incarnation is killed a random
 * moment after its run shows progress on that round (the flag pass or new
 * mail, a third of them; new mail stored, a third), or after its sync actor
 * started (a third), so kills land before, during and after the flag pass
 * and the new-mail batches; where each landed is printed.
 *
 * At the end of each phase a daemon runs until the mirror is the server's:
 * "lost" counts messages on the server missing from the mirror, and
 * "duplicated" mirror rows beyond one per server message (a UID twice, or
 * one the server no longer has). Both must be 0, and the mirror must hold
 * the server's UIDs, flags and content hashes exactly. The counts are printed
 * as one `kill9 tally: sync ...` line (test/helpers/kill-tally.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import t from 'tap';
import { seededRandom } from '../../../runtime/clock.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages, writeMaildir } from '../../harness/place-mail.ts';
import { compiledDaemon, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { reportKills } from '../../helpers/kill-tally.ts';
import { indexState, readMirror, storedCount } from '../../helpers/mirror.ts';

// Spawning and killing real processes takes minutes on a small machine.
t.setTimeout(1_200_000);

// Large enough that the short incarnations of the first phase do not finish the mirror on a quiet machine.
const TOTAL = 5_000;
const INITIAL_KILLS = 17;
const INCREMENTAL_KILLS = 10;
/** Per incremental round: new messages (four batches of 25), messages whose flags change, messages expunged. */
const ROUND = { appended: 100, flagged: 300, expunged: 5 } as const;
/** The sync's floor: both phases' kills (docs/testing.md, "Kill -9 tests"). */
const FLOOR = INITIAL_KILLS + INCREMENTAL_KILLS;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** UIDs and flags of the mirror's live rows (no MIME read: cheap enough to poll). */
function mirrorFlags(database: string): Map<number, string> {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 1_000 });
    try {
      const rows = db.prepare("SELECT uid, flags, keywords FROM messages WHERE state <> 'tombstoned'").all() as Array<{
        uid: number;
        flags: string;
        keywords: string;
      }>;
      return new Map(rows.map((r) => [Number(r.uid), [...(JSON.parse(r.flags) as string[]), ...(JSON.parse(r.keywords) as string[])].sort().join(' ')]));
    } finally {
      db.close();
    }
  } catch {
    return new Map();
  }
}

/** The server's UIDs and flags (no bodies: cheap enough to read every round), over a session of our own. */
async function serverFlags(dovecot: Dovecot): Promise<Map<number, string>> {
  return withImap(dovecot, 'kim', async (client) => {
    await client.mailboxOpen('INBOX', { readOnly: true });
    const out = new Map<number, string>();
    for await (const msg of client.fetch('1:*', { uid: true, flags: true }, { uid: true }))
      out.set(
        msg.uid,
        [...(msg.flags ?? [])]
          .filter((f) => f !== '\\Recent')
          .sort()
          .join(' '),
      );
    return out;
  });
}

type ServerView = Array<{ uid: number; flags: string[]; sha256: string }>;

/** Lost: on the server, not in the mirror. Duplicated: mirror rows beyond one per server message. */
function lostAndDuplicated(server: ServerView, mirror: ServerView): { lost: number; duplicated: number } {
  const onServer = new Set(server.map((m) => m.uid));
  const mirrored = new Set(mirror.map((m) => m.uid));
  const lost = [...onServer].filter((uid) => !mirrored.has(uid)).length;
  const duplicated = mirror.length - mirrored.size + [...mirrored].filter((uid) => !onServer.has(uid)).length;
  return { lost, duplicated };
}

t.test(`SIGKILL at ${FLOOR} random moments of an initial and an incremental mirror: the mirror ends equal to the server`, { timeout: 1_140_000 }, async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'kim', password: 'pw-kim' }] });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
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
  // The emitted JavaScript: under tsx every one of the 29 starts costs about three times as long.
  const compiled = await compiledDaemon();
  const spawn = () => spawnDaemon(['--config', config], { compiled });
  const live = new Set<ReturnType<typeof spawn>>();
  t.teardown(async () => {
    for (const d of live) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  });
  const kill = async (daemon: ReturnType<typeof spawn>): Promise<void> => {
    daemon.child.kill('SIGKILL');
    const ended = await daemon.exited;
    live.delete(daemon);
    if (ended.signal !== 'SIGKILL') t.fail(`an incarnation ended by itself before its kill (${JSON.stringify(ended)}): ${daemon.stderr().slice(-2_000)}`);
  };
  const random = seededRandom(20261123);
  let kills = 0;
  const tally = { lost: 0, duplicated: 0 };

  /** A daemon left running until the mirror holds what the server holds, every message derived; then stopped with SIGTERM and compared. */
  const settle = async (phase: string): Promise<void> => {
    const server = (await admin.fetchAll('kim', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    const want = new Map(server.map((m) => [m.uid, m.flags.join(' ')]));
    const final = spawn();
    live.add(final);
    const deadline = Date.now() + 180_000;
    const settled = (): boolean => {
      const index = indexState(database);
      if (index.withRaw !== server.length || index.underived !== 0) return false;
      const have = mirrorFlags(database);
      return have.size === want.size && [...want].every(([uid, flags]) => have.get(uid) === flags);
    };
    const began = Date.now();
    while (!settled() && Date.now() < deadline) await sleep(250);
    t.comment(`${phase}: settled in ${Math.round((Date.now() - began) / 1000)} s`);
    // SIGTERM is the daemon's to handle once it is up; before that it would simply end the process.
    while (!final.lines().some((line) => line.event === 'service.ready') && Date.now() < deadline) await sleep(100);
    final.child.kill('SIGTERM');
    t.equal((await final.exited).code, 0, `${phase}: the settling daemon stopped cleanly`);
    live.delete(final);

    const mirror = readMirror(database, 'kim', 'inbox');
    const counted = lostAndDuplicated(server, mirror);
    tally.lost += counted.lost;
    tally.duplicated += counted.duplicated;
    t.same(counted, { lost: 0, duplicated: 0 }, `${phase}: nothing missing, nothing twice (${server.length} on the server)`);
    t.same(mirror, server, `${phase}: same UIDs, flags and content hashes as the server`);
    const index = indexState(database);
    t.same(
      { underived: index.underived, documents: index.documents, keys: index.keys, strayDocuments: index.strayDocuments, strayPassages: index.strayPassages },
      { underived: 0, documents: index.stored, keys: index.stored, strayDocuments: 0, strayPassages: 0 },
      `${phase}: every message derived once: one search document and one index key each, no passage without its document`,
    );
    t.ok(index.stored > server.length * 0.9, `${phase}: most of the mailbox is readable mail (${index.stored} of ${server.length})`);
    t.ok(index.ftsConsistent, `${phase}: the full-text index agrees with its documents`);
  };

  // ------------------------------------------------------------ phase 1: the initial mirror
  let phaseBegan = Date.now();
  const progress: number[] = [];
  const underivedAtKill: number[] = [];
  for (let n = 0; n < INITIAL_KILLS; n++) {
    const before = storedCount(database);
    const daemon = spawn();
    live.add(daemon);
    // Wait until this incarnation has stored something, then kill it a random moment later.
    const deadline = Date.now() + 30_000;
    while (storedCount(database) <= before && Date.now() < deadline && daemon.child.exitCode === null) await sleep(25);
    // Short enough that an incarnation rarely mirrors more than a few batches on a quiet machine: every kill must land mid-mirror.
    await sleep(Math.floor(random.next() * 120));
    await kill(daemon);
    kills += 1;
    progress.push(storedCount(database));
    underivedAtKill.push(indexState(database).underived);
  }
  t.comment(`initial mirror: ${INITIAL_KILLS} kills in ${Math.round((Date.now() - phaseBegan) / 1000)} s`);
  t.comment(`initial mirror: stored after each kill ${progress.join(', ')}; not derived yet ${underivedAtKill.join(', ')}`);
  t.ok(progress.at(-1)! < TOTAL, 'every kill landed during the initial mirror');
  t.ok(
    progress.every((n, i) => i === 0 || n >= progress[i - 1]!),
    'progress was never lost',
  );
  t.ok(
    underivedAtKill.some((n) => n > 0),
    'some kills caught the derivation writer with stored mail still to derive',
  );
  await settle('initial mirror');

  // ------------------------------------------------------------ phase 2: incremental runs with new mail, flag changes and expunges
  phaseBegan = Date.now();
  const landed = { beforeAnyChange: 0, midRound: 0, roundMirrored: 0 };
  const rounds: string[] = [];
  for (let round = 0; round < INCREMENTAL_KILLS; round++) {
    const mirrored = [...mirrorFlags(database).keys()];
    const pick = (n: number, besides: number[] = []): number[] => {
      const chosen = new Set<number>();
      while (chosen.size < n) {
        const uid = mirrored[Math.floor(random.next() * mirrored.length)]!;
        if (!besides.includes(uid)) chosen.add(uid);
      }
      return [...chosen];
    };
    const changed = pick(ROUND.flagged);
    const expunged = pick(ROUND.expunged, changed);
    const keyword = `round${round}`;
    const [adding, removing] = [changed.slice(0, ROUND.flagged / 2), changed.slice(ROUND.flagged / 2)];
    await admin.addFlags('kim', 'INBOX', adding, ['\\Flagged', keyword]);
    await admin.removeFlags('kim', 'INBOX', removing, ['\\Seen', '\\Flagged', `round${round - 1}`]);
    await admin.expunge('kim', 'INBOX', expunged);
    const appended = await appendMessages(dovecot, 'kim', 'INBOX', generateMailbox({ seed: 100 + round, count: ROUND.appended, profile: 'small' }));
    const server = await serverFlags(dovecot);
    // How much of this round the mirror shows: new mail stored, changed flags applied, expunges seen.
    const shown = (): { stored: number; flags: number; expunged: number } => {
      const have = mirrorFlags(database);
      return {
        stored: appended.filter((uid) => have.has(uid)).length,
        flags: changed.filter((uid) => server.has(uid) && have.get(uid) === server.get(uid)).length,
        expunged: expunged.filter((uid) => !server.has(uid) && !have.has(uid)).length,
      };
    };
    const atStart = shown();
    const daemon = spawn();
    live.add(daemon);
    const deadline = Date.now() + 30_000;
    if (round % 3 === 2) {
      // A random moment after the sync actor started: before its run changed anything, as often as not.
      while (!daemon.lines().some((l) => l.event === 'actor.start') && Date.now() < deadline && daemon.child.exitCode === null) await sleep(10);
      await sleep(Math.floor(random.next() * 400));
    } else {
      // Once the flag pass committed (between it and the new mail, or in the first batches), or once new mail is stored (mid-batches).
      const moved =
        round % 3 === 0
          ? (): boolean => {
              const now = shown();
              return now.stored > atStart.stored || now.flags > atStart.flags || now.expunged > atStart.expunged;
            }
          : (): boolean => shown().stored > atStart.stored;
      while (!moved() && Date.now() < deadline && daemon.child.exitCode === null) await sleep(10);
      await sleep(Math.floor(random.next() * 60));
    }
    await kill(daemon);
    kills += 1;
    const atKill = shown();
    const flagsTotal = changed.filter((uid) => server.has(uid)).length;
    const expungedTotal = expunged.filter((uid) => !server.has(uid)).length;
    const same = (a: typeof atKill): boolean => a.stored === atStart.stored && a.flags === atStart.flags && a.expunged === atStart.expunged;
    if (same(atKill)) landed.beforeAnyChange += 1;
    else if (atKill.stored === appended.length && atKill.flags === flagsTotal && atKill.expunged === expungedTotal) landed.roundMirrored += 1;
    else landed.midRound += 1;
    rounds.push(`${atKill.stored}/${appended.length} new, ${atKill.flags}/${flagsTotal} flags, ${atKill.expunged}/${expungedTotal} expunged`);
  }
  t.comment(`incremental: ${INCREMENTAL_KILLS} kills in ${Math.round((Date.now() - phaseBegan) / 1000)} s`);
  t.comment(`incremental rounds at each kill: ${rounds.join('; ')}`);
  t.comment(
    `incremental kills landed: ${landed.beforeAnyChange} before the run changed anything, ${landed.midRound} mid-round, ${landed.roundMirrored} with the round mirrored`,
  );
  t.ok(landed.beforeAnyChange + landed.midRound > 0, 'some incremental kills landed before their round was mirrored');
  await settle('incremental');

  reportKills(t, { actor: 'sync', kills, ...tally }, FLOOR);
});
