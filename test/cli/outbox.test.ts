/**
 * The outbox commands against a service started for real (one account
 * whose mail server is never reached), behind a forwarding proxy that
 * records every request, with sends placed in its database by the test
 * (test/helpers/outbox.ts). Nothing here needs the outbox actor: every
 * decision shown is answered before it would be asked. It proves:
 * - `outbox status`: one count per stage, as a table and as JSON, with a
 *   note on standard error when a send began transmitting;
 * - `outbox list`: the rows newest first with stage, attempts, last
 *   failure and due time, no recipient and no subject; `--stage`,
 *   `--account`, `--page-size` and `--cursor` (the cursor to add goes to
 *   standard error); the deployment's 400 sentences passed on (a stage no
 *   send can stand at, an unconfigured account, a cursor under other
 *   filters);
 * - `outbox show`: the one command printing recipients; an unknown send is
 *   "Not found" with the deployment's sentence; a read-only credential is
 *   stopped with the permission named;
 * - `outbox cancel` and `outbox requeue` of an unknown send print
 *   `RecordUnknown`'s sentence and exit 1; a body naming no send is the
 *   deployment's 400; `requeue` without `--yes` and with piped input is
 *   refused and sends no request to the route; on a terminal, a "no"
 *   sends none either; missing `--message` is a usage error (2);
 * - no key, subject or recipient in any output but `show`'s recipients.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { openServiceStore, seedSend, storedSend } from '../helpers/outbox.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, onTerminal, startCliService, type CliResult } from './harness.ts';

t.setTimeout(300_000);

t.test('outbox commands', async (t) => {
  const svc = await startCliService(t, {
    accounts: [
      { id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] },
      { id: 'quinn', user: 'quinn', folders: [{ Alias: 'inbox' }] },
    ],
  });
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);
  const recorded = seedSend(db, 'pat', 'Recorded', { failedOnce: true });
  const begun = seedSend(db, 'quinn', 'TransmissionBegun');
  const sent = seedSend(db, 'pat', 'Sent');
  const refused = seedSend(db, 'pat', 'Refused');
  const all = [recorded, begun, sent, refused];
  const proxy = await forwardingProxy(t, svc.admin);
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
  t.equal((await loginWithKey(home, proxy.url, svc.keys.operator)).code, 0);

  await t.test('status', async (t) => {
    const table = await run(['outbox', 'status']);
    t.equal(table.code, 0, table.stderr);
    t.match(table.stdout, /STAGE\s+SENDS\nRecorded\s+1\nTransmissionBegun\s+1\nSent\s+1\nRefused\s+1\nCancelled\s+0\n?$/);
    t.match(table.stderr, /1 send\(s\) began transmitting and the server never answered: nothing retries them by itself/);
    t.same(json(await run(['outbox', 'status', '--output', 'json'])), {
      stageCounts: { Recorded: 1, TransmissionBegun: 1, Sent: 1, Refused: 1, Cancelled: 0 },
    });
  });

  await t.test('list', async (t) => {
    const table = await run(['outbox', 'list']);
    t.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    t.match(lines[0], /^MESSAGE\s+RECORDED AT\s+ACCOUNT\s+STAGE\s+ATTEMPTS\s+LAST FAILURE\s+DUE AT$/);
    t.same(
      lines.slice(1).map((l) => l.split(/\s+/)[0]),
      [refused, sent, begun, recorded].map((s) => s.outgoingEmail),
      'newest first',
    );
    t.match(table.stdout, new RegExp(`${recorded.outgoingEmail}\\s+\\S+\\s+pat\\s+Recorded\\s+1\\s+server-busy \\(451\\)\\s+\\d{4}-`));
    t.match(table.stdout, new RegExp(`${refused.outgoingEmail}\\s+\\S+\\s+pat\\s+Refused\\s+1\\s+recipient-refused \\(550\\)\\s+-`));
    t.match(table.stdout, new RegExp(`${begun.outgoingEmail}\\s+\\S+\\s+quinn\\s+TransmissionBegun\\s+0\\s+-\\s+-`));

    const page = json<{ outgoingEmails: Array<{ outgoingEmail: string }>; nextCursor?: string }>(
      await run(['outbox', 'list', '--stage', 'Recorded', '--account', 'pat', '--output', 'json']),
    );
    t.same(
      page.outgoingEmails.map((e) => e.outgoingEmail),
      [recorded.outgoingEmail],
    );
    const first = await run(['outbox', 'list', '--page-size', '2']);
    t.equal(first.code, 0, first.stderr);
    const cursor = /add --cursor (\S+) \(with the same filters\)/.exec(first.stderr)?.[1];
    t.ok(cursor, 'the cursor to add goes to standard error');
    const second = json<{ outgoingEmails: Array<{ outgoingEmail: string }>; nextCursor?: string }>(
      await run(['outbox', 'list', '--page-size', '2', '--cursor', cursor!, '--output', 'json']),
    );
    t.same(
      second.outgoingEmails.map((e) => e.outgoingEmail),
      [begun, recorded].map((s) => s.outgoingEmail),
    );
    t.equal(second.nextCursor, undefined);
    t.match((await run(['outbox', 'list', '--stage', 'Cancelled'])).stdout, /^No send matches\.\n$/);

    const stage = await run(['outbox', 'list', '--stage', 'Queued']);
    t.equal(stage.code, 1);
    t.match(
      stage.stderr,
      /The deployment refused the request: Send stage as one of the five stages a send can stand at \(Recorded, TransmissionBegun, Sent, Refused, Cancelled\), or leave it out\./,
    );
    const account = await run(['outbox', 'list', '--account', 'nobody']);
    t.equal(account.code, 1);
    t.match(account.stderr, /configures no mail account named 'nobody'/);
    const otherFilters = await run(['outbox', 'list', '--stage', 'Sent', '--cursor', cursor!]);
    t.equal(otherFilters.code, 1);
    t.match(otherFilters.stderr, /issued under other filters/);
    t.equal((await run(['outbox', 'list', '--page-size', '201'])).code, 1, 'past 200 is the deployment’s refusal');
    t.equal((await run(['outbox', 'list', '--page-size', '0'])).code, 2, 'zero is a usage error');
  });

  await t.test('show: the one command printing recipients', async (t) => {
    const table = await run(['outbox', 'show', '--message', sent.outgoingEmail]);
    t.equal(table.code, 0, table.stderr);
    t.match(table.stdout, new RegExp(`Message\\s+${sent.outgoingEmail}`));
    t.match(table.stdout, /Stage\s+Sent/);
    t.match(table.stdout, /RECIPIENT\s+HEADER\s+STATE\s+REPLY\s+REPLIED AT/);
    for (const [i, header] of ['to', 'cc', 'bcc'].entries())
      t.match(table.stdout, new RegExp(`${sent.recipients[i]!.replaceAll('.', '\\.')}\\s+${header}\\s+accepted\\s+250\\s+\\d{4}-`));
    t.notOk(table.stdout.includes(sent.subject), 'no subject');
    const detail = json<{ outgoingEmail: string; recipients: Array<{ address: string }> }>(
      await run(['outbox', 'show', '--message', refused.outgoingEmail, '--output', 'json']),
    );
    t.same(
      detail.recipients.map((r) => r.address),
      refused.recipients,
    );
    const unknown = await run(['outbox', 'show', '--message', 'o999999']);
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /Not found: The deployment holds no send of a configured account by that identifier/);
    const malformed = await run(['outbox', 'show', '--message', '../summary']);
    t.equal(malformed.code, 1);
    t.match(malformed.stderr, /Not found: /, 'the identifier stays one path segment');
    t.equal((await run(['outbox', 'show'])).code, 2, '--message is required');

    t.equal((await loginWithKey(home, proxy.url, svc.keys.reader, ['--name', 'reader'])).code, 0);
    const reader = await run(['outbox', 'show', '--message', sent.outgoingEmail]);
    t.equal(reader.code, 1);
    t.match(reader.stderr, /does not hold the permission service\.admin\.audit\.read/);
    t.equal((await run(['outbox', 'list'])).code, 0, 'read is enough for the listing');
    const readerCancel = await run(['outbox', 'cancel', '--message', recorded.outgoingEmail]);
    t.equal(readerCancel.code, 1);
    t.match(readerCancel.stderr, /does not hold the permission service\.admin\.operate.*Nothing was withdrawn\./);
    t.equal((await run(['switch', '127.0.0.1'])).code, 0);
  });

  await t.test('cancel and requeue: unknown sends, bodies naming none, confirmation', async (t) => {
    const cancelUnknown = await run(['outbox', 'cancel', '--message', 'o999999']);
    t.equal(cancelUnknown.code, 1);
    t.match(cancelUnknown.stdout, /^The deployment holds no send o999999 of a configured account; nothing was withdrawn\.\n$/);
    t.match(cancelUnknown.stderr, /The send was not withdrawn \(RecordUnknown\)\./);
    const cancelJson = await run(['outbox', 'cancel', '--message', 'o999999', '--output', 'json']);
    t.equal(cancelJson.code, 1);
    t.same(JSON.parse(cancelJson.stdout), { outgoingEmail: 'o999999', outcome: 'RecordUnknown' });
    const malformed = await run(['outbox', 'cancel', '--message', '12']);
    t.equal(malformed.code, 1);
    t.match(
      malformed.stderr,
      /The deployment refused the request: Name the send in outgoingEmail as the outbox listing gives it: o followed by digits, such as o12\. Nothing was withdrawn\./,
    );
    t.equal((await run(['outbox', 'cancel'])).code, 2, '--message is required');

    const before = proxy.requests.filter((r) => r === 'POST /api/admin/outbox/requeue').length;
    const piped = await run(['outbox', 'requeue', '--message', refused.outgoingEmail, '--despite-refusal'], 'yes\n');
    t.equal(piped.code, 1);
    t.match(piped.stderr, /standard input is not a terminal, and piped input never answers one; pass --yes to agree\. Nothing was changed\./);
    t.equal(piped.stdout, '', 'nothing read, nothing printed');
    const unasked = await run(['outbox', 'requeue', '--message', refused.outgoingEmail]);
    t.equal(unasked.code, 1);
    t.equal(proxy.requests.filter((r) => r === 'POST /api/admin/outbox/requeue').length, before, 'no requeue was sent');
    t.equal(storedSend(db, refused.id).stage, 'Refused', 'nothing changed');

    const requeueUnknown = await run(['outbox', 'requeue', '--message', 'o999999', '--yes']);
    t.equal(requeueUnknown.code, 1);
    t.match(requeueUnknown.stdout, /The deployment holds no send o999999 of a configured account; nothing was requeued\./);
    t.match(requeueUnknown.stderr, /The send was not requeued \(RecordUnknown\)\./);
    t.equal((await run(['outbox', 'requeue', '--yes'])).code, 2, '--message is required');
    t.equal((await run(['outbox', 'requeue', '--message', 'o1', '--despite-refusal=yes', '--yes'])).code, 2, '--despite-refusal takes no value');
  });

  await t.test(
    'requeue on a terminal: a "no" sends nothing',
    { skip: spawnSync('script', ['--version']).status !== 0 && 'util-linux script is not installed' },
    async (t) => {
      const before = proxy.requests.length;
      const declined = await onTerminal(home, ['outbox', 'requeue', '--message', refused.outgoingEmail], [{ after: /\[y\/N\] /, send: 'n\r' }]);
      t.equal(declined.code, 1, declined.screen);
      t.match(declined.screen, /Offer send o\d+ again\? If an earlier attempt did reach a mailbox, this may put a second copy there\./);
      t.match(declined.screen, /Not confirmed; nothing was changed\./);
      t.same(proxy.requests.slice(before), ['GET /api/admin/session'], 'only the session was read');
      t.equal(storedSend(db, refused.id).stage, 'Refused');
    },
  );

  const everything = results.flatMap((r) => [r.stdout, r.stderr]);
  t.same(leaks(svc.secrets, ...everything), [], 'no key in any output');
  const shown = results.filter((r) => r.stdout.includes('RECIPIENT') || r.stdout.includes('"recipients"'));
  t.equal(shown.length, 2, 'the two show readings');
  const others = results.filter((r) => !shown.includes(r)).flatMap((r) => [r.stdout, r.stderr]);
  t.same(
    leaks(
      all.flatMap((s) => s.recipients),
      ...others,
    ),
    [],
    'no recipient outside show',
  );
  t.same(
    leaks(
      all.map((s) => s.subject),
      ...everything,
    ),
    [],
    'no subject anywhere',
  );
  t.same(
    leaks(
      all.flatMap((s) => [s.subject, ...s.recipients]),
      svc.logs.raw(),
    ),
    [],
    'nor in the service log',
  );
});
