/**
 * Spam classification end to end: a private Dovecot, a private rspamd (the
 * real engine) and the service, driven through the `mailcairn` client.
 *
 * Runs: GTUBE and a clean message through the engine; a verdict header a
 * configured receiving server wrote is honoured, a sender's own spoofed
 * `X-Spam-Flag: YES` is not (the engine judges that message); a dry run
 * changes nothing on the server; an applying run sets the keyword on
 * exactly the messages judged spam (read back over IMAP); classifications
 * page newest first with the changes asked.
 *
 * Arrival: with Spam:Enabled, the first mirror is judged; the engine down
 * leaves new mail unclassified (no verdict, the mail stays where it is),
 * and when the engine comes back the mail is classified and moved to the
 * junk folder (read back over IMAP).
 *
 * No subject or address of the mail reaches a log line or an output.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { type Dovecot, startDovecot } from '../harness/dovecot.ts';
import { fetchAllOverImap } from '../harness/imap-admin.ts';
import { appendMessages } from '../harness/place-mail.ts';
import { type Rspamd, startRspamd } from '../harness/rspamd.ts';
import { storedCount } from '../helpers/mirror.ts';
import { sensitiveStrings } from '../helpers/privacy.ts';
import { CLEAN_MESSAGE, GTUBE_MESSAGE, message } from '../helpers/spam-messages.ts';
import { cli, cliHome, type CliResult, type CliService, leaks, loginWithKey, startCliService } from './harness.ts';

type Teardown = Parameters<typeof cliHome>[0];

t.setTimeout(400_000);

const MX = 'Received: from sender.example (sender.example [192.0.2.1]) by mx.example.org (Postfix) with ESMTPS id 4QxYz; Sat, 28 Nov 2026 10:00:01 +0000';

type Entry = {
  id: number;
  storedEmailId: string;
  verdict: string;
  score: number;
  source: string;
  runId: number | null;
  applied: boolean;
  conclusion: string | null;
  changes: Array<{ changeId: string; change: string; state: string; outcome: string | null }>;
};
type Page = { entries: Entry[]; nextCursor?: string };
type RunAnswer = {
  started: boolean;
  run: { apply: boolean; isOutstanding: boolean; judgedEmailCount: number; spamEmailCount: number; changeCount: number; outcome: string | null } | null;
};

const sha = (raw: string): string => createHash('sha256').update(raw).digest('hex');

async function until<T>(what: string, read: () => Promise<T> | T, ok: (value: T) => boolean, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

let dovecot: Dovecot;
let engine: Rspamd;

t.before(async () => {
  [dovecot, engine] = await Promise.all([
    startDovecot({
      users: [
        { user: 'pat', password: 'pw-pat' },
        { user: 'lee', password: 'pw-lee' },
        { user: 'kim', password: 'pw-kim' },
      ],
    }),
    startRspamd(),
  ]);
});
t.teardown(async () => {
  await engine?.close();
  await dovecot?.stop();
});

function spamSection(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    Spam: {
      TrustedServers: [{ Host: 'mx.example.org' }],
      Engine: { Address: engine.url, Timeout: '00:00:05', CoolDown: '00:00:01', RetryDelay: '00:00:01', RetryDelayMaximum: '00:00:02' },
      ...extra,
    },
  };
}

function client(t: Teardown, svc: CliService) {
  const home = cliHome(t);
  const outputs: CliResult[] = [];
  const run = async (args: string[], input?: string): Promise<CliResult> => {
    const result = await cli(home, args, input === undefined ? {} : { input });
    outputs.push(result);
    return result;
  };
  const json = <T>(result: CliResult): T => {
    if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  return { home, run, json, outputs, login: () => loginWithKey(home, svc.admin, svc.keys.operator) };
}

t.test('runs: the engine, trusted headers, a dry run and an applying run, classifications pages', async (t) => {
  const spoofed = message({ subject: 'Quarterly figures attached', headersBelow: ['X-Spam-Flag: YES', 'X-Spam-Status: Yes, score=99.0 required=5.0'] }, [MX]);
  const trusted = message({ subject: 'Weekly notes from the team', headersAbove: ['X-Spam-Flag: YES', 'X-Spam-Status: Yes, score=9.0 required=5.0'] }, [MX]);
  const placed = { gtube: GTUBE_MESSAGE, clean: CLEAN_MESSAGE, spoofed, trusted };
  await appendMessages(
    dovecot,
    'pat',
    'INBOX',
    Object.values(placed).map((raw) => ({ raw })),
  );
  const svc = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }],
    sections: spamSection({ Enabled: false, Action: 'Keyword', Keyword: '$Junk' }),
  });
  await until(
    'the mirror',
    () => storedCount(`${svc.dir}/mailcairn.db`),
    (n) => n >= 4,
  );
  const c = client(t, svc);
  t.equal((await c.login()).code, 0);

  // Which stored email is which: by the raw bytes the server holds.
  const bySha = new Map(Object.entries(placed).map(([name, raw]) => [sha(raw), name]));
  const before = await fetchAllOverImap(dovecot, 'pat', 'INBOX');
  t.equal(before.length, 4);

  // A dry run.
  const started = c.json<RunAnswer>(await c.run(['spam', 'run', '--account', 'pat', '--output', 'json']));
  t.equal(started.started, true);
  t.equal(started.run?.apply, false, 'a dry run unless asked to apply');
  const watched = await c.run(['spam', 'run-status', '--account', 'pat', '--watch', '--interval', '200ms']);
  t.equal(watched.code, 0, watched.stderr);
  const dry = c.json<RunAnswer>(await c.run(['spam', 'run-status', '--account', 'pat', '--output', 'json']));
  t.match(dry.run, { isOutstanding: false, outcome: 'completed', judgedEmailCount: 4, spamEmailCount: 2, changeCount: 0 });
  const dryPage = c.json<Page>(await c.run(['spam', 'classifications', '--account', 'pat', '--output', 'json']));
  t.equal(dryPage.entries.length, 4);
  t.ok(
    dryPage.entries.every((e) => e.changes.length === 0 && !e.applied),
    'a dry run asks for nothing',
  );
  t.same(await fetchAllOverImap(dovecot, 'pat', 'INBOX'), before, 'and nothing changed on the server');

  // The verdicts, by message: stored email ids are in placement order (ids ascend with UIDs).
  const ids = [...dryPage.entries].sort((a, b) => a.id - b.id);
  const names = before.map((m) => bySha.get(m.sha256));
  const verdictOf = (name: string): Entry => ids[names.indexOf(name)]!;
  t.match(verdictOf('gtube'), { verdict: 'spam', score: 1, source: 'engine' }, 'GTUBE: spam at the reject score');
  t.match(verdictOf('clean'), { verdict: 'ham', source: 'engine' }, 'a clean message: ham');
  t.ok(verdictOf('clean').score < 0.5, `clean score ${verdictOf('clean').score}`);
  t.match(verdictOf('trusted'), { verdict: 'spam', score: 1, source: 'trusted-header' }, "a trusted server's verdict header is honoured");
  t.match(verdictOf('spoofed'), { verdict: 'ham', source: 'engine' }, "a sender's spoofed X-Spam-Flag is ignored: the engine judges it");

  // An applying run: refused without --yes on a pipe, then done.
  const refused = await c.run(['spam', 'run', '--account', 'pat', '--apply'], '');
  t.not(refused.code, 0, 'applying asks first');
  const applying = c.json<RunAnswer>(await c.run(['spam', 'run', '--account', 'pat', '--apply', '--yes', '--output', 'json']));
  t.equal(applying.run?.apply, true);
  await until(
    'the applying run',
    async () => c.json<RunAnswer>(await c.run(['spam', 'run-status', '--account', 'pat', '--output', 'json'])),
    (a) => a.run?.apply === true && !a.run.isOutstanding,
  );
  const applied = await until(
    'the changes to complete',
    async () => c.json<Page>(await c.run(['spam', 'classifications', '--account', 'pat', '--page-size', '4', '--output', 'json'])),
    (p) => p.entries.filter((e) => e.changes.length > 0).every((e) => e.changes.every((ch) => ch.state === 'completed')),
  );
  const asked = applied.entries.filter((e) => e.changes.length > 0);
  t.equal(asked.length, 2, 'the two spam verdicts asked for a change');
  t.ok(
    asked.every((e) => e.verdict === 'spam' && e.changes[0]!.change === 'add-keywords' && e.changes[0]!.outcome === 'applied'),
    'each an add-keywords, applied',
  );
  const after = await fetchAllOverImap(dovecot, 'pat', 'INBOX');
  const flagged = after.filter((m) => m.flags.some((f) => f.toLowerCase() === '$junk')).map((m) => bySha.get(m.sha256));
  t.same(flagged.sort(), ['gtube', 'trusted'], 'exactly the messages judged spam carry the keyword on the server');

  // Pages: newest first, four per page, the cursor bound to the filters.
  const first = c.json<Page>(await c.run(['spam', 'classifications', '--account', 'pat', '--page-size', '3', '--output', 'json']));
  t.equal(first.entries.length, 3);
  t.ok(first.nextCursor, 'more follow');
  const second = c.json<Page>(
    await c.run(['spam', 'classifications', '--account', 'pat', '--page-size', '10', '--cursor', first.nextCursor!, '--output', 'json']),
  );
  t.equal(second.entries.length, 5);
  t.notOk(second.nextCursor);
  const all = [...first.entries, ...second.entries];
  t.same(
    all.map((e) => e.id),
    [...all.map((e) => e.id)].sort((a, b) => b - a),
    'newest first',
  );
  const table = await c.run(['spam', 'classifications', '--account', 'pat']);
  t.match(table.stdout, /VERDICT/);
  const mismatched = await c.run(['spam', 'classifications', '--account', 'pat', '--from', '2020-01-01T00:00:00Z', '--cursor', first.nextCursor!]);
  t.not(mismatched.code, 0, 'a cursor is bound to its filters');

  const secrets = sensitiveStrings(Object.values(placed).map((raw) => Buffer.from(raw)));
  t.ok(secrets.length > 0);
  t.same(leaks(secrets, svc.logs.raw()), [], 'no subject or address in any log line');
  t.same(leaks(secrets, ...c.outputs.flatMap((o) => [o.stdout, o.stderr])), [], 'nor in any output');
});

t.test('arrival: the first mirror is judged; engine down leaves mail unclassified, classified and moved once it is back', async (t) => {
  await dovecot.doveadm(['mailbox', 'create', '-u', 'lee', 'Junk']);
  const clean = message({ subject: 'Lunch on Thursday at noon' });
  await appendMessages(dovecot, 'lee', 'INBOX', [{ raw: clean }]);
  const svc = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'lee', user: 'lee', folders: [{ Alias: 'inbox' }, { Alias: 'junk', Path: 'Junk' }] }],
    sections: spamSection({ Enabled: true, Action: 'Move', Folder: 'junk' }),
  });
  const c = client(t, svc);
  t.equal((await c.login()).code, 0);
  const page = async (): Promise<Page> => c.json<Page>(await c.run(['spam', 'classifications', '--account', 'lee', '--output', 'json']));
  const first = await until('the first mirror judged', page, (p) => p.entries.length === 1);
  t.match(first.entries[0], { verdict: 'ham', runId: null, changes: [] }, 'judged on arrival');

  await engine.stop();
  t.teardown(() => engine.start());
  const spam = message({
    subject: 'You have won a prize today',
    body: `Claim it.\r\n\r\nXJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X`,
  });
  await appendMessages(dovecot, 'lee', 'INBOX', [{ raw: spam }]);
  svc.service.supervisor.ref(SCHEDULER_ID).tell({ type: 'sync-scheduler.wake', account: 'lee' });
  await until(
    'the engine reported unavailable',
    () => svc.logs.events('spam.engine-unavailable'),
    (lines) => lines.length >= 2,
  );
  t.match(svc.logs.events('spam.engine-unavailable')[0], { account: 'lee', work: 'arrival', failure: 'refused' });
  t.equal((await page()).entries.length, 1, 'no verdict while the engine is down');
  t.equal((await fetchAllOverImap(dovecot, 'lee', 'INBOX')).length, 2, 'the mail stays where it is');

  // A run asked meanwhile waits for the engine; asking again returns it.
  const asked = c.json<RunAnswer>(await c.run(['spam', 'run', '--account', 'lee', '--output', 'json']));
  t.equal(asked.started, true);
  const waiting = await until(
    'the run waiting for the engine',
    async () =>
      c.json<RunAnswer & { run: { waitingForEngineSince: string | null } }>(await c.run(['spam', 'run-status', '--account', 'lee', '--output', 'json'])),
    (a) => a.run?.waitingForEngineSince !== null,
  );
  t.equal(waiting.run?.isOutstanding, true);
  const again = c.json<RunAnswer & { run: { requestedAt: string } }>(await c.run(['spam', 'run', '--account', 'lee', '--apply', '--yes', '--output', 'json']));
  t.equal(again.started, false, 'asking while a run is under way returns it');
  t.equal(again.run?.apply, false, 'the run under way, not a new one');
  const text = await c.run(['spam', 'run-status', '--account', 'lee']);
  t.match(text.stdout, /engine has been unreachable since/);

  await engine.start();
  const judged = await until('the arrival classified and moved', page, (p) => {
    const arrivals = p.entries.filter((e) => e.runId === null);
    return arrivals.length === 2 && arrivals[0]!.changes.length === 1 && arrivals[0]!.changes[0]!.state === 'completed';
  });
  const arrived = judged.entries.filter((e) => e.runId === null);
  t.match(arrived[0], { verdict: 'spam', source: 'engine', runId: null, applied: true });
  t.equal(arrived[0]!.changes[0]!.change, 'relocate');
  const ended = await until(
    'the waiting run to end',
    async () => c.json<RunAnswer>(await c.run(['spam', 'run-status', '--account', 'lee', '--output', 'json'])),
    (a) => a.run?.isOutstanding === false,
  );
  t.match(ended.run, { apply: false, changeCount: 0, outcome: 'completed' }, 'the run carried on once the engine was back');
  // The arrival stage may have moved the spam to the junk folder (not judged by runs) before the run reached it.
  t.ok((ended.run?.judgedEmailCount ?? 0) >= 1, 'and judged what it covered');
  t.ok(svc.logs.events('spam.engine-back').length >= 1, 'the engine coming back is logged');
  const inbox = await fetchAllOverImap(dovecot, 'lee', 'INBOX');
  const junk = await fetchAllOverImap(dovecot, 'lee', 'Junk');
  t.same(
    inbox.map((m) => m.sha256),
    [sha(clean)],
    'the clean message stays in the inbox',
  );
  t.same(
    junk.map((m) => m.sha256),
    [sha(spam)],
    'the spam is in the junk folder on the server',
  );
  const secrets = sensitiveStrings([Buffer.from(clean), Buffer.from(spam)]);
  t.same(leaks(secrets, svc.logs.raw()), [], 'no subject or address in any log line');
});

t.test('a run waiting for the engine resumes after a restart, from the store', async (t) => {
  const trusted = message({ subject: 'Notes of the review', headersAbove: ['X-Spam-Flag: YES'] }, [MX]);
  await appendMessages(
    dovecot,
    'kim',
    'INBOX',
    [GTUBE_MESSAGE, CLEAN_MESSAGE, trusted, message({ subject: 'Agenda for Monday' })].map((raw) => ({ raw })),
  );
  await engine.stop();
  t.teardown(() => engine.start());
  const first = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'kim', user: 'kim', folders: [{ Alias: 'inbox' }] }],
    sections: spamSection({ Enabled: false, Action: 'Keyword', Keyword: 'ToReview' }),
  });
  await until(
    'the mirror',
    () => storedCount(`${first.dir}/mailcairn.db`),
    (n) => n >= 4,
  );
  const c1 = client(t, first);
  t.equal((await c1.login()).code, 0);
  t.equal(c1.json<RunAnswer>(await c1.run(['spam', 'run', '--account', 'kim', '--apply', '--yes', '--output', 'json'])).started, true);
  await until(
    'the run waiting for the engine',
    async () =>
      c1.json<RunAnswer & { run: { waitingForEngineSince: string | null } }>(await c1.run(['spam', 'run-status', '--account', 'kim', '--output', 'json'])),
    (a) => a.run?.waitingForEngineSince !== null,
  );
  await first.service.stop();

  await engine.start();
  const second = await startCliService(t, {
    dovecot,
    dir: first.dir,
    keys: first.keys,
    synchronization: true,
    accounts: [{ id: 'kim', user: 'kim', folders: [{ Alias: 'inbox' }] }],
    sections: spamSection({ Enabled: false, Action: 'Keyword', Keyword: 'ToReview' }),
  });
  const c2 = client(t, second);
  t.equal((await c2.login()).code, 0);
  const ended = await until(
    'the resumed run to end',
    async () => c2.json<RunAnswer>(await c2.run(['spam', 'run-status', '--account', 'kim', '--output', 'json'])),
    (a) => a.run?.isOutstanding === false,
  );
  t.match(ended.run, { apply: true, judgedEmailCount: 4, spamEmailCount: 2, changeCount: 2, outcome: 'completed' }, 'resumed and finished after the restart');
  await until(
    'the keyword on the server',
    () => fetchAllOverImap(dovecot, 'kim', 'INBOX'),
    (messages) => messages.filter((m) => m.flags.some((f) => f.toLowerCase() === 'toreview')).length === 2,
  );
  const page = c2.json<Page>(await c2.run(['spam', 'classifications', '--account', 'kim', '--output', 'json']));
  t.equal(page.entries.length, 4, 'each message judged once by the run');
});
