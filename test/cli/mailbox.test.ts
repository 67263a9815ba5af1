/**
 * The mailbox, folder and job commands against a service mirroring a
 * private Dovecot: `mailbox authorize` (token from standard input; an
 * unconfigured account refused with nothing stored), `mailbox status`,
 * `rederive` and `rederive-status`, `rewind` (estimate on standard output,
 * refused with piped input and no --yes, done with --yes; a read-only
 * credential stopped at the write), `folder erase` (a mirrored folder
 * refused, nothing erased; after a restart that withdraws the mapping,
 * interrupted by Ctrl-C between passes and finished by running it again),
 * `jobs dead-letters` and `jobs retry`. JSON output of every reading parses;
 * no key, token, subject or mail address reaches any output.
 */
import Libsql from 'libsql';
import t from 'tap';
import { JOB_TYPES } from '../../actors/mail-query/protocol/dead-letters.ts';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { mirrorStates, storedCount } from '../helpers/mirror.ts';
import { sensitiveStrings } from '../helpers/privacy.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, startCliService, tempDir, type CliResult, type CliService } from './harness.ts';

t.setTimeout(300_000);

type Sync = { accounts: Array<{ account: string; phase: string; folders: Array<{ alias: string; mirrored: boolean; lastSeenUid: number | null }> }> };

async function settled(svc: CliService, expected: number): Promise<void> {
  const scheduler = svc.service.supervisor.ref(SCHEDULER_ID);
  const end = Date.now() + 180_000;
  for (;;) {
    const status = await scheduler.ask({ type: 'sync-scheduler.status' });
    const database = `${svc.dir}/mailcairn.db`;
    if (storedCount(database) >= expected && status.accounts.every((a) => a.phase !== 'running')) return;
    if (Date.now() > end) throw new Error(`the mirror did not reach ${expected} messages`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function refreshTokens(database: string): number {
  const db = new Libsql(database, { readonly: true, timeout: 2_000 });
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM mailbox_refresh_tokens').get() as { n: number }).n);
  } finally {
    db.close();
  }
}

t.test('mailbox, folder and job commands', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const archive = [...generateMailbox({ seed: 11, count: 600 })];
  const inbox = [...generateMailbox({ seed: 12, count: 20 })];
  await writeMaildir(dovecot, 'pat', 'Archive', archive);
  await writeMaildir(dovecot, 'pat', 'INBOX', inbox);
  const dir = tempDir(t);
  const database = `${dir}/mailcairn.db`;
  const mapped = [{ Alias: 'inbox' }, { Alias: 'archive', Path: 'Archive' }];
  const first = await startCliService(t, { dir, dovecot, synchronization: true, accounts: [{ id: 'pat', user: 'pat', folders: mapped }] });
  await settled(first, 620);

  const proxy = await forwardingProxy(t, first.admin);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const run = async (args: string[], input?: string): Promise<CliResult> => {
    const result = await cli(home, args, input === undefined ? {} : { input });
    results.push(result);
    return result;
  };
  const json = <T>(result: CliResult): T => {
    t.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  t.equal((await loginWithKey(home, proxy.url, first.keys.operator)).code, 0);

  // Synchronization status, as a table and as JSON.
  const table = await run(['mailbox', 'status']);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /Synchronization is on\./);
  t.match(table.stdout, /pat\s+archive\s+yes/);
  t.match(table.stdout, /NOT YET INDEXED/, 'the table has the derivation lag column');
  const status = json<Sync>(await run(['mailbox', 'status', '--output', 'json']));
  t.match(
    status.accounts[0]!.folders.find((f) => f.alias === 'archive'),
    { mirrored: true, lastSeenUid: 600, notYetIndexedEmailCount: 0 },
    'a folder whose mail is all derived has nothing waiting',
  );

  // A refresh token: the unconfigured account is refused and nothing is stored; a configured one is stored.
  const token = `1//refresh-${Date.now()}-do-not-print`;
  const nobody = await run(['mailbox', 'authorize', '--account', 'nobody'], `${token}\n`);
  t.equal(nobody.code, 1);
  t.match(nobody.stderr, /configures no mail account named 'nobody'/);
  t.match(nobody.stderr, /Nothing was stored\./);
  t.equal(refreshTokens(database), 0, 'nothing stored');
  const stored = await run(['mailbox', 'authorize', '--account', 'pat'], `${token}\n`);
  t.equal(stored.code, 0, stored.stderr);
  t.match(stored.stdout, /Stored the refresh token for account pat/);
  t.equal(refreshTokens(database), 1);

  // Re-derivation.
  const started = json<{ started: boolean; run: { account: string; folder: string | null } }>(
    await run(['mailbox', 'rederive', '--account', 'pat', '--folder', 'inbox', '--output', 'json']),
  );
  t.match(started, { started: true, run: { account: 'pat', folder: 'inbox' } });
  const progress = json<{ run: { isOutstanding: boolean } | null }>(
    await run(['mailbox', 'rederive-status', '--account', 'pat', '--folder', 'inbox', '--output', 'json']),
  );
  t.ok(progress.run, 'the run is reported');
  const text = await run(['mailbox', 'rederive-status', '--account', 'pat', '--folder', 'inbox']);
  t.match(text.stdout, /Re-derivation of folder inbox of account pat: (under way|ended)/);
  const never = await run(['mailbox', 'rederive-status', '--account', 'pat', '--folder', 'archive']);
  t.match(never.stdout, /No re-derivation was ever asked for folder archive of account pat\./);
  t.same(json<{ run: null }>(await run(['mailbox', 'rederive-status', '--account', 'pat', '--folder', 'archive', '--output', 'json'])).run, null);

  // Rewind: the estimate first; piped input without --yes is refused and nothing is discarded.
  const unasked = await run(['mailbox', 'rewind', '--account', 'pat', '--folder', 'inbox']);
  t.equal(unasked.code, 1);
  t.match(unasked.stdout, /would have the next run fetch 20 stored email\(s\) again/);
  t.match(unasked.stderr, /standard input is not a terminal, and piped input never answers one; pass --yes/);
  const answeredByPipe = await run(['mailbox', 'rewind', '--account', 'pat', '--folder', 'inbox'], 'yes\n');
  t.equal(answeredByPipe.code, 1, 'a "yes" piped in answers nothing');
  const estimateOnly = await run(['mailbox', 'rewind', '--account', 'pat', '--folder', 'inbox', '--output', 'json']);
  t.same(JSON.parse(estimateOnly.stdout), { estimate: { account: 'pat', folder: 'inbox', storedEmailCount: 20 }, rewound: null });
  const still = json<Sync>(await run(['mailbox', 'status', '--output', 'json']));
  t.equal(still.accounts[0]!.folders.find((f) => f.alias === 'inbox')!.lastSeenUid, 20, 'nothing was discarded');

  // A read-only credential reads the estimate and is stopped at the write.
  t.equal((await loginWithKey(home, proxy.url, first.keys.reader, ['--name', 'reader'])).code, 0);
  const readOnly = await run(['mailbox', 'rewind', '--account', 'pat', '--folder', 'inbox', '--yes']);
  t.equal(readOnly.code, 1);
  t.match(readOnly.stdout, /would have the next run fetch 20/);
  t.match(readOnly.stderr, /does not hold the permission service\.admin\.operate/);
  t.equal((await run(['switch', '127.0.0.1'])).code, 0);

  const rewound = await run(['mailbox', 'rewind', '--account', 'pat', '--folder', 'inbox', '--yes']);
  t.equal(rewound.code, 0, rewound.stderr);
  t.match(rewound.stdout, /Discarded the progress of inbox/);
  const after = json<Sync>(await run(['mailbox', 'status', '--output', 'json']));
  t.equal(after.accounts[0]!.folders.find((f) => f.alias === 'inbox')!.lastSeenUid, null, 'the progress went');

  // Erasing a folder still mirrored is refused; nothing is erased.
  const mirrored = await run(['folder', 'erase', '--account', 'pat', '--folder', 'archive']);
  t.equal(mirrored.code, 1);
  t.match(mirrored.stderr, /The folder archive of account pat is still mirrored/);
  t.match(mirrored.stderr, /Nothing was erased\./);
  t.notMatch(mirrored.stderr, /interrupted/);
  t.equal(mirrorStates(database, 'pat', 'archive').stored, 600);

  // Restart without the archive mapping; the erasure is slowed at the proxy so it can be interrupted between passes.
  await first.service.stop();
  const second = await startCliService(t, { dir, dovecot, keys: first.keys, accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }] });
  proxy.setTarget(second.admin);
  proxy.delay('/api/admin/folders/erasure', 1_500);
  const interrupted = await cli(home, ['folder', 'erase', '--account', 'pat', '--folder', 'archive'], {
    timeoutMs: 60_000,
    started: (child, output) => {
      const poll = setInterval(() => {
        if (output.stderr().includes('so far')) {
          clearInterval(poll);
          child.kill('SIGINT');
        }
      }, 20);
      child.once('exit', () => clearInterval(poll));
    },
  });
  results.push(interrupted);
  t.equal(interrupted.code, 130, interrupted.stderr);
  t.match(interrupted.stderr, /Erased 250 email\(s\) of folder archive of account pat so far/, 'the running total');
  t.match(
    interrupted.stderr,
    /Erased 250 email\(s\) of folder archive of account pat before the erasure was interrupted \(Ctrl-C\).*Run the same command again to continue\./,
  );
  t.ok(mirrorStates(database, 'pat', 'archive').stored! > 0, 'mail remains after the interruption');
  const finished = await run(['folder', 'erase', '--account', 'pat', '--folder', 'archive', '--output', 'json']);
  const totals = json<{ erasedEmailCount: number; passes: number }>(finished);
  t.ok(totals.erasedEmailCount === 350 || totals.erasedEmailCount === 100, `the second run erased the rest (${totals.erasedEmailCount})`);
  t.equal(mirrorStates(database, 'pat', 'archive').stored ?? 0, 0, 'none of the folder remains');
  const again = await run(['folder', 'erase', '--account', 'pat', '--folder', 'archive']);
  t.match(again.stdout, /Erased 0 email\(s\) of folder archive of account pat in 1 pass\(es\)/, 'an empty folder erases nothing and succeeds');

  // Dead letters: none here; the listing reads as JSON and as a table; a retry of an unknown job exits 1.
  t.same(json<{ jobs: unknown[] }>(await run(['jobs', 'dead-letters', '--output', 'json'])).jobs, []);
  t.same(
    json<{ jobs: unknown[] }>(await run(['jobs', 'dead-letters', '--type', JOB_TYPES[0]!, '--account', 'pat', '--page-size', '10', '--output', 'json'])).jobs,
    [],
  );
  t.match((await run(['jobs', 'dead-letters'])).stdout, /No stopped job matches\./);
  const badAccount = await run(['jobs', 'dead-letters', '--account', 'nobody']);
  t.equal(badAccount.code, 1);
  t.match(badAccount.stderr, /The deployment refused the request: .*nobody/);
  const retry = await run(['jobs', 'retry', '--job', 'j999999', '--output', 'json']);
  t.equal(retry.code, 1);
  t.same(JSON.parse(retry.stdout), { job: 'j999999', outcome: 'JobUnknown' });
  t.match(retry.stderr, /not retried \(JobUnknown\)/);

  const everything = results.flatMap((r) => [r.stdout, r.stderr]);
  t.same(leaks([...first.secrets, token], ...everything), [], 'no key or token in any output');
  t.same(leaks(sensitiveStrings([...archive, ...inbox].map((m) => m.raw)), ...everything), [], 'no subject or address in any output');
  t.notOk(
    everything.some((o) => o.includes('\u001b')),
    'no colour when piped',
  );
});
