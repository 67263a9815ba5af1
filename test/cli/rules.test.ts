/**
 * The rule commands against a service mirroring a private Dovecot, through
 * the real admin client: `rules list` (run order, the file compared),
 * `rules run --watch` (started, followed to its end), `rules run-status`,
 * `rules history` a page at a time by cursor; a read-only credential stopped
 * at the run. JSON output of every reading parses; no key, subject or mail
 * address reaches any output.
 */
import t from 'tap';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { appendMessages } from '../harness/place-mail.ts';
import { storedCount } from '../helpers/mirror.ts';
import { sensitiveStrings } from '../helpers/privacy.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, startCliService, type CliResult } from './harness.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;

function message(n: number, from: string, subject: string): Buffer {
  return Buffer.from(
    [
      `From: Sender ${n} <${from}>`,
      'To: Pat Owner <pat.owner@example.org>',
      `Subject: ${subject}`,
      `Message-ID: <cli-rules-${n}@example.org>`,
      'Date: Mon, 02 Nov 2026 10:00:00 +0000',
      '',
      `Body ${n}.`,
      '',
    ].join('\r\n'),
  );
}

t.test('rules list, run, run-status and history', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const raws = [
    message(1, 'bulletin@lists.example.net', 'Bulletin of the week'),
    message(2, 'bulletin@lists.example.net', 'Another bulletin'),
    message(3, 'colleague@work.example.org', 'Quarterly figures'),
  ];
  await appendMessages(
    dovecot,
    'pat',
    'INBOX',
    raws.map((raw) => ({ raw })),
  );
  const rules = [
    { Name: 'flag-bulletins', When: { SenderDomain: 'lists.example.net' }, Then: { MarkFlagged: true } },
    { Name: 'seen-figures', When: { SubjectContains: 'figures' }, Then: { MarkSeen: true } },
  ];
  // The arrival stage off: only the run judges.
  const svc = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }],
    sections: { MailRules: { Enabled: false, Rules: rules } },
  });
  const scheduler = svc.service.supervisor.ref(SCHEDULER_ID);
  for (const end = Date.now() + 60_000; ; ) {
    const status = await scheduler.ask({ type: 'sync-scheduler.status' });
    if (storedCount(`${svc.dir}/mailcairn.db`) >= 3 && status.accounts.every((a) => a.phase !== 'running')) break;
    if (Date.now() > end) throw new Error('the mirror did not settle');
    await new Promise((r) => setTimeout(r, 200));
  }
  const proxy = await forwardingProxy(t, svc.admin);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const run = async (args: string[]): Promise<CliResult> => {
    const result = await cli(home, args);
    results.push(result);
    return result;
  };
  const json = <T>(result: CliResult): T => {
    t.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  t.equal((await loginWithKey(home, proxy.url, svc.keys.operator)).code, 0);

  const listed = await run(['rules', 'list']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /2 rule\(s\), not judging arriving mail \(rule runs only\); the configuration file still says the same\./);
  t.match(listed.stdout, /1\s+flag-bulletins\s+every\s+SenderDomain=lists\.example\.net\s+MarkFlagged=true/);
  t.match(listed.stdout, /2\s+seen-figures/);
  const listing = json<Json>(await run(['rules', 'list', '--output', 'json']));
  t.same(
    listing.rules.map((r: Json) => r.name),
    ['flag-bulletins', 'seen-figures'],
  );

  t.match((await run(['rules', 'run-status', '--account', 'pat'])).stdout, /No rule run was ever asked for account pat\./);
  const started = await run(['rules', 'run', '--account', 'pat', '--watch', '--interval', '200ms']);
  t.equal(started.code, 0, started.stderr);
  t.match(started.stdout, /Started\./);
  t.match(started.stdout, /run \d+ ended: 3\/3 judged, 3 changes/, 'followed to its end, one line per reading on a pipe');
  t.match((await run(['rules', 'run-status', '--account', 'pat'])).stdout, /ended at .*3 of 3 judged \(100%\); 3 matched, 3 change\(s\) recorded\./);
  const status = json<Json>(await run(['rules', 'run-status', '--account', 'pat', '--output', 'json']));
  t.match(status.run, { account: 'pat', isOutstanding: false, judgedEmailCount: 3, totalEmailCount: 3, matchedEmailCount: 3, changeCount: 3 });

  // History: a page at a time; the walk by cursor reaches every conclusion.
  const firstPage = await run(['rules', 'history', '--account', 'pat', '--page-size', '2']);
  t.equal(firstPage.code, 0, firstPage.stderr);
  t.match(firstPage.stdout, /seen-figures|flag-bulletins/);
  const cursor = /--cursor (\S+)/.exec(firstPage.stderr + firstPage.stdout)?.[1];
  t.ok(cursor, 'a cursor is named while more follow');
  const secondPage = json<Json>(await run(['rules', 'history', '--account', 'pat', '--page-size', '2', '--cursor', cursor!, '--output', 'json']));
  t.equal(secondPage.entries.length, 1, 'the last conclusion');
  t.notOk(secondPage.nextCursor, 'and no cursor after it');
  t.match(secondPage.entries[0], { rule: 'flag-bulletins', source: 'Run', asked: { flagged: true } });
  const later = await run(['rules', 'history', '--account', 'pat', '--from', new Date(Date.now() + 60_000).toISOString()]);
  t.equal(later.code, 0, later.stderr);
  t.match(later.stdout, /No rule conclusion matches/, '--from after every conclusion leaves none');
  const earlier = json<Json>(await run(['rules', 'history', '--account', 'pat', '--before', new Date().toISOString(), '--output', 'json']));
  t.equal(earlier.entries.length, 3, '--before now keeps all three');

  // A read-only credential reads but does not run.
  t.equal((await loginWithKey(home, proxy.url, svc.keys.reader, ['--name', 'reader'])).code, 0);
  const refused = await run(['rules', 'run', '--account', 'pat']);
  t.not(refused.code, 0, 'a run needs service.admin.operate');
  t.equal((await run(['rules', 'list'])).code, 0, 'the listing is a read');

  const everything = results.flatMap((r) => [r.stdout, r.stderr]);
  t.same(leaks(svc.secrets, ...everything), [], 'no key in any output');
  t.same(leaks(sensitiveStrings(raws), ...everything), [], 'no subject or address in any output');
});
