/**
 * Progress on long work, watched with the real client against a real
 * service (docs/cli.md "Watching progress"):
 * - a first mirror of a mailbox from a private Dovecot, slowed by a fault
 *   proxy so it takes seconds: `mailbox status --watch` prints one line per
 *   refresh on a pipe, the stored count rising to the server's count with a
 *   rate and an estimate on the way, and ends by itself when the mirror is
 *   done; the same with `--output json`, one document per line; the status
 *   table then shows the folder mirrored whole;
 * - the folder's erasure after its mapping is withdrawn: each pass's
 *   running total with its share of the folder, and the pace and time left
 *   once a second of passes is measured;
 * - an embedding backfill with the OpenAI-compatible stand-in (answers held
 *   a little): `embedding status --watch` rises to every stored email
 *   embedded, with a rate and an estimate, and ends by itself;
 * - `--interval` without `--watch`, and a malformed one, are usage errors;
 * - no key, subject or address in any output.
 */
import t from 'tap';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { startEmbeddingStandin } from '../harness/embedding-standin.ts';
import { startFaultProxy } from '../harness/fault-proxy.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { indexState } from '../helpers/mirror.ts';
import { sensitiveStrings } from '../helpers/privacy.ts';
import { cli, cliHome, type CliHome, type CliResult, forwardingProxy, leaks, loginWithKey, onTerminal, startCliService, tempDir } from './harness.ts';

t.setTimeout(300_000);

const ARCHIVE = 1_000;

type Progress = { completedEmailCount: number; totalEmailCount: number | null; emailsPerSecond: number | null; secondsLeft: number | null };
type Sync = { accounts: Array<{ account: string; phase: string; folders: Array<{ alias: string; progress: Progress | null }> }> };

async function until(what: string, ready: () => boolean, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!ready()) {
    if (Date.now() > end) throw new Error(`${what} did not happen in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The client run in the background: its result, and its standard output so far. */
function background(home: CliHome, args: string[]): { result: Promise<CliResult>; stdout(): string } {
  let output: { stdout(): string } | undefined;
  const result = cli(home, args, { timeoutMs: 180_000, started: (_child, o) => (output = o) });
  return { result, stdout: () => output?.stdout() ?? '' };
}

const counts = (lines: string[], pattern: RegExp): number[] => lines.flatMap((line) => (pattern.exec(line) ? [Number(pattern.exec(line)![1])] : []));
const rising = (values: number[]): boolean => values.every((v, i) => i === 0 || v >= values[i - 1]!);

t.test('a first mirror watched to its end, then the folder erased pass by pass', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const archive = [...generateMailbox({ seed: 51, count: ARCHIVE })];
  const inbox = [...generateMailbox({ seed: 52, count: 5 })];
  await writeMaildir(dovecot, 'pat', 'Archive', archive);
  await writeMaildir(dovecot, 'pat', 'INBOX', inbox);
  // Held until the watchers run, then slowed: small batches, each a few round trips of added latency.
  const slow = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => slow.close());
  slow.stall();
  const dir = tempDir(t);
  const first = await startCliService(t, {
    dir,
    dovecot: { ...dovecot, port: slow.port },
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }, { Alias: 'archive', Path: 'Archive' }] }],
    sections: { MailSynchronization: { Interval: '00:10:00', BatchSize: 20, Enabled: true } },
  });
  const admin = await forwardingProxy(t, first.admin);
  const home = cliHome(t);
  const results: CliResult[] = [];
  t.equal((await loginWithKey(home, admin.url, first.keys.operator)).code, 0);

  const badInterval = await cli(home, ['mailbox', 'status', '--interval', '2s']);
  t.equal(badInterval.code, 2, 'an --interval without --watch is a usage error');
  t.match(badInterval.stderr, /--interval goes with --watch/);
  const malformed = await cli(home, ['mailbox', 'status', '--watch', '--interval', 'soon']);
  t.equal(malformed.code, 2);
  t.match(malformed.stderr, /--interval takes a duration from 200ms to 60m/);

  const plain = background(home, ['mailbox', 'status', '--watch', '--interval', '300ms']);
  const asJson = background(home, ['mailbox', 'status', '--watch', '--interval', '300ms', '--output', 'json']);
  await until('both watchers drawing', () => plain.stdout().includes('\n') && asJson.stdout().includes('\n'));
  const released = Date.now();
  slow.delay(20);
  slow.resume();
  const [lines, documents] = await Promise.all([plain.result, asJson.result]);
  results.push(lines, documents);
  t.comment(`the mirror took ${Date.now() - released} ms once released`);

  // On a pipe: one line per refresh, rising to the whole folder, with a pace and an estimate on the way; then it ends by itself.
  t.equal(lines.code, 0, lines.stderr);
  const printed = lines.stdout.trim().split('\n');
  t.ok(
    printed.every((line) => /^\d{4}-\d\d-\d\dT[\d:.]+Z pat (running|waiting|waiting-for-slot)(: archive .*; inbox .*)?$/.test(line)),
    'each line: the instant, the account and its phase, each mirrored folder once the run listed them',
  );
  const stored = counts(printed, /archive (\d+) of (?:\d+|\?) stored/);
  t.ok(stored.length >= 3, `a line per refresh (${stored.length})`);
  t.ok(rising(stored), `the stored count only rises (${stored.join(' ')})`);
  t.ok(
    stored.some((n) => n > 0 && n < ARCHIVE),
    'seen part way',
  );
  t.match(printed.at(-1), new RegExp(`archive ${ARCHIVE} of ${ARCHIVE} stored \\(100%\\)`), 'the last line: the folder mirrored whole');
  t.match(printed.at(-1), /inbox 5 of 5 stored \(100%\)/);
  t.ok(
    printed.some((line) => new RegExp(`archive \\d+ of ${ARCHIVE} stored \\(\\d+%\\), [\\d.]+ per second, about \\d+ (s|min) left`).test(line)),
    'a rate and an estimate while under way',
  );

  // With --output json: one document per line per refresh.
  t.equal(documents.code, 0, documents.stderr);
  const refreshes = documents.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Sync);
  t.ok(refreshes.length >= 3, `a document per refresh (${refreshes.length})`);
  // Before the run lists the folders, the account has none to show.
  const answers = refreshes.filter((a) => a.accounts[0]!.folders.some((f) => f.alias === 'archive'));
  const progressOf = (s: Sync) => s.accounts[0]!.folders.find((f) => f.alias === 'archive')!.progress!;
  t.ok(rising(answers.map((a) => progressOf(a).completedEmailCount)), 'the stored count only rises');
  t.match(progressOf(answers.at(-1)!), { completedEmailCount: ARCHIVE, totalEmailCount: ARCHIVE, secondsLeft: 0 });
  t.ok(
    answers.some((a) => {
      const p = progressOf(a);
      return p.completedEmailCount < ARCHIVE && p.totalEmailCount === ARCHIVE && (p.emailsPerSecond ?? 0) > 0 && (p.secondsLeft ?? 0) > 0;
    }),
    'a rate and an estimate while under way',
  );

  // Once done, the table shows it; a watch of a mirror already done draws once and ends.
  const table = await cli(home, ['mailbox', 'status']);
  results.push(table);
  t.match(table.stdout, /MIRROR PROGRESS/);
  t.match(table.stdout, new RegExp(`pat\\s+archive\\s+yes.*${ARCHIVE} of ${ARCHIVE} stored \\(100%\\)`));
  const once = await cli(home, ['mailbox', 'status', '--watch']);
  results.push(once);
  t.equal(once.code, 0);
  t.equal(once.stdout.trim().split('\n').length, 1, 'nothing under way: one line, and done');
  const drawn = await onTerminal(home, ['mailbox', 'status', '--watch'], [], { NO_COLOR: '1' });
  t.equal(drawn.code, 0);
  t.match(
    drawn.screen,
    new RegExp(`MIRROR PROGRESS[^]*${ARCHIVE} of ${ARCHIVE} stored \\(100%\\)[^]*Read at \\S+; done\\.`),
    'on a terminal: the whole reading',
  );
  results.push({ code: drawn.code, signal: null, stdout: drawn.screen, stderr: '' });

  // The mapping withdrawn, the folder is erased pass by pass (each slowed at the front), the total shown as it goes.
  await first.service.stop();
  slow.delay(0);
  const second = await startCliService(t, {
    dir,
    dovecot: { ...dovecot, port: slow.port },
    keys: first.keys,
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }],
  });
  admin.setTarget(second.admin);
  admin.delay('/api/admin/folders/erasure', 400);
  const erased = await cli(home, ['folder', 'erase', '--account', 'pat', '--folder', 'archive'], { timeoutMs: 60_000 });
  results.push(erased);
  t.equal(erased.code, 0, erased.stderr);
  const notes = erased.stderr.split('\n').filter((line) => line.startsWith('Erased'));
  t.match(notes[0], /^Erased 250 email\(s\) of folder archive of account pat so far \(25% of 1000\)/);
  t.match(notes[1], /^Erased 500 email\(s\) of folder archive of account pat so far \(50% of 1000\)/);
  t.match(
    notes[2],
    /^Erased 750 email\(s\) of folder archive of account pat so far \(75% of 1000\), [\d.]+ per second, about \d+ s left…$/,
    'a pace once a second of passes is measured',
  );
  t.match(erased.stdout, /Erased 1000 email\(s\) of folder archive of account pat in 4 pass\(es\)/);

  const everything = results.flatMap((r) => [r.stdout, r.stderr]);
  t.same(leaks(first.secrets, ...everything), [], 'no key in any output');
  t.same(leaks(sensitiveStrings([...archive, ...inbox].map((m) => m.raw)), ...everything), [], 'no subject or address in any output');
});

t.test('an embedding backfill watched to its end', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const mail = [...generateMailbox({ seed: 53, count: 200 })];
  await writeMaildir(dovecot, 'pat', 'INBOX', mail);
  const standin = await startEmbeddingStandin({ dimensions: 48 });
  t.teardown(() => standin.close());
  const svc = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }],
    sections: {
      Embeddings: { BaseAddress: standin.baseAddress, Model: 'standin-embed', Dimensions: 48, BatchSize: 4 },
      EmbeddingBackfill: { BatchSize: 10 },
    },
  });
  const scheduler = svc.service.supervisor.ref(SCHEDULER_ID);
  const database = `${svc.dir}/mailcairn.db`;
  const end = Date.now() + 120_000;
  for (;;) {
    const status = await scheduler.ask({ type: 'sync-scheduler.status' });
    const state = indexState(database);
    if (state.stored === mail.length && state.underived === 0 && status.accounts.every((a) => a.phase !== 'running')) break;
    if (Date.now() > end) throw new Error('the mailbox was not mirrored and indexed in time');
    await new Promise((r) => setTimeout(r, 200));
  }
  const home = cliHome(t);
  const results: CliResult[] = [];
  t.equal((await loginWithKey(home, svc.admin, svc.keys.operator)).code, 0);

  // The first answers are held until the watcher runs; then each takes a little while.
  standin.setLatency(1_500);
  const activated = await cli(home, ['embedding', 'activate', '--yes']);
  results.push(activated);
  t.equal(activated.code, 0, activated.stderr);
  const watcher = background(home, ['embedding', 'status', '--watch', '--interval', '300ms']);
  await until('the watcher drawing', () => watcher.stdout().includes('\n'));
  standin.setLatency(20);
  const watched = await watcher.result;
  results.push(watched);

  t.equal(watched.code, 0, watched.stderr);
  const printed = watched.stdout.trim().split('\n');
  t.ok(
    printed.every((line) => /^\d{4}-\d\d-\d\dT[\d:.]+Z serving generation 1: \d+ of \d+ stored emails embedded/.test(line)),
    'each line: the instant and the serving generation',
  );
  const embedded = counts(printed, /serving generation 1: (\d+) of/);
  t.ok(embedded.length >= 3, `a line per refresh (${embedded.length})`);
  t.ok(rising(embedded), `the embedded count only rises (${embedded.join(' ')})`);
  const total = Number(/ of (\d+) stored emails embedded/.exec(printed.at(-1)!)?.[1]);
  t.ok(total > 0 && total <= mail.length, `the total is the stored mail with passages (${total})`);
  t.match(printed.at(-1), new RegExp(`: ${total} of ${total} stored emails embedded \\(100%\\)`), 'the last line: all of it');
  t.ok(
    printed.some((line) => /embedded \(\d+%\), [\d.]+ per second, about \d+ (s|min) left/.test(line)),
    'a rate and an estimate while under way',
  );

  const everything = results.flatMap((r) => [r.stdout, r.stderr]);
  t.same(leaks(svc.secrets, ...everything), [], 'no key in any output');
  t.same(leaks(sensitiveStrings(mail.map((m) => m.raw)), ...everything), [], 'no subject or address in any output');
});
