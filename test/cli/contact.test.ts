/**
 * The `contact` commands against a service started for real, behind a
 * forwarding proxy that records every request; collected contacts are
 * placed in its database as the sync writer would (runtime/store/contacts
 * `collect`), and a concurrent edit or erasure is made there too while the
 * client's PUT is held at the proxy. It proves:
 * - `create` (table and JSON; several `--address` need `--preferred`, which
 *   must name one of them: usage errors sending nothing);
 * - `show` by identifier and by address (case-insensitive), exactly one of
 *   the two; nothing found is exit 1 quoting no address;
 * - `list` in name order, `--origin`, `--page-size` with the cursor on
 *   standard error, `--cursor`; control characters of a collected name
 *   shown as escapes;
 * - `update`, `add-address`, `remove-address`: read, change what the
 *   options state, PUT the whole record; the preferred marker rules; a
 *   collected contact refused before any PUT until promoted; last writer
 *   wins over an edit made between the read and the PUT; an erasure made
 *   then is answered as a contact the book does not hold;
 * - `promote`; `export` as one JSON document on standard output whatever
 *   `--output` says;
 * - `delete` and `delete-collected`: the reading (identity and counts) on
 *   standard output, the question on standard error; piped input without
 *   `--yes` refused with no DELETE sent; `--yes` erases; nothing to erase
 *   sends nothing; a terminal's "no" erases nothing;
 * - a credential without `service.admin.audit.read` stopped with the
 *   permission named;
 * - no name, address or note on standard error of any command, in any
 *   output of the commands that do not show contacts, or in the service log.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { collect, contactById, erase, replace } from '../../runtime/store/contacts/book.ts';
import { openServiceStore } from '../helpers/outbox.ts';
import { until } from '../helpers/log-capture.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, onTerminal, startCliService, type CliResult } from './harness.ts';

t.setTimeout(600_000);

type View = {
  id: string;
  name: string;
  origin: string;
  addresses: Array<{ address: string; preferred: boolean }>;
  note: string | null;
  recordedAt: string;
  amendedAt: string;
};

/** Everything personal this test writes: none may reach standard error, a log line, or a command that does not show contacts. */
const PRIVATE = {
  sato: 'Sato Aiko',
  satoWork: 'sato.aiko@example.org',
  satoHome: 'aiko.home@example.net',
  satoNew: 'aiko.new@example.com',
  satoNote: 'Met at the Friday review',
  renamed: 'Aiko Sato-Lind',
  lee: 'Lee Morgan',
  leeAddress: 'lee.morgan@example.org',
  leeNote: 'Prefers mornings',
  raced: 'Someone Else Wrote This',
  collectedName: 'Collected Correspondent',
  collectedAddress: 'correspondent@example.net',
  bareAddress: 'no-name-sender@example.net',
  evilAddress: 'evil@example.net',
  missing: 'nobody-here@example.org',
};

const SHOWING = new Set(['create', 'show', 'list', 'update', 'add-address', 'remove-address', 'promote', 'export']);

t.test('contact commands', async (t) => {
  const svc = await startCliService(t);
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);
  const proxy = await forwardingProxy(t, svc.admin);
  const home = cliHome(t);
  const results: Array<{ command: string; result: CliResult }> = [];
  const run = async (args: string[], input?: string): Promise<CliResult> => {
    const result = await cli(home, args, input === undefined ? {} : { input });
    results.push({ command: args[1] ?? '', result });
    return result;
  };
  const json = <T>(result: CliResult): T => {
    t.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  const sent = (request: string): number => proxy.requests.filter((r) => r === request).length;
  t.equal((await loginWithKey(home, proxy.url, svc.keys.operator)).code, 0);

  let sato = '';
  let lee = '';

  await t.test('create', async (t) => {
    const table = await run(['contact', 'create', '--name', PRIVATE.lee, '--address', PRIVATE.leeAddress, '--note', PRIVATE.leeNote]);
    t.equal(table.code, 0, table.stderr);
    lee = /^Contact\s+(c\d+)$/m.exec(table.stdout)?.[1] ?? '';
    t.match(lee, /^c\d+$/);
    t.match(table.stdout, new RegExp(`^Name\\s+${PRIVATE.lee}$`, 'm'));
    t.match(table.stdout, /^Origin\s+Asserted$/m);
    t.match(table.stdout, new RegExp(`^Addresses\\s+${PRIVATE.leeAddress} \\(preferred\\)$`, 'm'));
    t.match(table.stdout, new RegExp(`^Note\\s+${PRIVATE.leeNote}$`, 'm'));

    const created = json<View>(
      await run([
        'contact',
        'create',
        '--name',
        PRIVATE.sato,
        '--address',
        PRIVATE.satoWork,
        '--address',
        PRIVATE.satoHome,
        '--preferred',
        PRIVATE.satoHome.toUpperCase(),
        '--note',
        PRIVATE.satoNote,
        '--output',
        'json',
      ]),
    );
    sato = created.id;
    t.match(created, {
      name: PRIVATE.sato,
      origin: 'Asserted',
      addresses: [
        { address: PRIVATE.satoWork, preferred: false },
        { address: PRIVATE.satoHome, preferred: true },
      ],
      note: PRIVATE.satoNote,
    });

    const posts = sent('POST /api/admin/contacts');
    const several = await run(['contact', 'create', '--name', PRIVATE.sato, '--address', PRIVATE.satoWork, '--address', PRIVATE.satoHome]);
    t.equal(several.code, 2, 'several addresses need --preferred');
    t.match(several.stderr, /--preferred is required when several --address are given/);
    const stranger = await run(['contact', 'create', '--name', PRIVATE.sato, '--address', PRIVATE.satoWork, '--preferred', PRIVATE.missing]);
    t.equal(stranger.code, 2);
    t.match(stranger.stderr, /--preferred must name one of the addresses the contact will hold/);
    t.equal((await run(['contact', 'create', '--address', PRIVATE.satoWork])).code, 2, '--name is required');
    t.equal((await run(['contact', 'create', '--name', PRIVATE.sato])).code, 2, '--address is required');
    t.equal(sent('POST /api/admin/contacts'), posts, 'no usage error sent anything');

    const invalid = await run(['contact', 'create', '--name', PRIVATE.sato, '--address', 'not an address']);
    t.equal(invalid.code, 1);
    t.match(invalid.stderr, /The deployment refused the request: .*Nothing was recorded\./);
  });

  await t.test('show', async (t) => {
    const byId = await run(['contact', 'show', '--id', sato]);
    t.equal(byId.code, 0, byId.stderr);
    t.match(byId.stdout, new RegExp(`^Addresses\\s+${PRIVATE.satoWork}\\n\\s+${PRIVATE.satoHome} \\(preferred\\)$`, 'm'));
    t.match(json<View>(await run(['contact', 'show', '--id', sato, '--output', 'json'])), { id: sato, name: PRIVATE.sato });

    const byAddress = json<{ contacts: View[] }>(await run(['contact', 'show', '--address', PRIVATE.satoWork.toUpperCase(), '--output', 'json']));
    t.same(
      byAddress.contacts.map((c) => c.id),
      [sato],
      'compared case-insensitively',
    );
    const none = await run(['contact', 'show', '--address', PRIVATE.missing]);
    t.equal(none.code, 1);
    t.match(none.stderr, /No contact of the book holds that address\./);
    t.equal(none.stdout, '');

    const unknown = await run(['contact', 'show', '--id', 'c999999']);
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /Not found: The book holds no contact by that identifier/);
    t.equal((await run(['contact', 'show'])).code, 2, 'neither --id nor --address');
    t.equal((await run(['contact', 'show', '--id', sato, '--address', PRIVATE.satoWork])).code, 2, 'both');
    const badId = await run(['contact', 'show', '--id', 'sato']);
    t.equal(badId.code, 2);
    t.match(badId.stderr, /--id takes a contact identifier: c and a number/);
  });

  await t.test('list', async (t) => {
    db.transaction(() =>
      collect(
        db,
        [
          { address: PRIVATE.collectedAddress, name: PRIVATE.collectedName },
          { address: PRIVATE.bareAddress, name: null },
          { address: PRIVATE.evilAddress, name: 'Evil\u001b[2JName' },
        ],
        Date.now(),
      ),
    )();
    const table = await run(['contact', 'list']);
    t.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    t.match(lines[0], /^CONTACT\s+ORIGIN\s+NAME\s+PREFERRED ADDRESS\s+ADDRESSES\s+AMENDED AT$/);
    t.equal(lines.length, 6, 'a header and five contacts');
    t.match(table.stdout, new RegExp(`${sato}\\s+Asserted\\s+${PRIVATE.sato}\\s+${PRIVATE.satoHome}\\s+2\\s+\\d{4}-`));
    t.notOk(table.stdout.includes('\u001b'), 'no control character reaches the terminal');
    t.match(table.stdout, /Evil\\u001b\[2JName/, 'shown as an escape');

    const collected = json<{ contacts: View[]; nextCursor?: string }>(await run(['contact', 'list', '--origin', 'Collected', '--output', 'json']));
    t.same(
      collected.contacts.map((c) => c.origin),
      ['Collected', 'Collected', 'Collected'],
    );

    const first = await run(['contact', 'list', '--page-size', '2']);
    t.equal(first.code, 0, first.stderr);
    const cursor = /add --cursor (\S+) \(with the same --origin\)/.exec(first.stderr)?.[1];
    t.ok(cursor, 'the cursor to add goes to standard error');
    const walked = [...first.stdout.trimEnd().split('\n').slice(1)];
    let next = cursor;
    while (next !== undefined) {
      const page = json<{ contacts: View[]; nextCursor?: string }>(await run(['contact', 'list', '--page-size', '2', '--cursor', next, '--output', 'json']));
      walked.push(...page.contacts.map((c) => c.id));
      next = page.nextCursor;
    }
    t.equal(walked.length, 5, 'the pages hold every contact once');
    t.equal((await run(['contact', 'list', '--origin', 'collected'])).code, 2, 'the origin tokens are Asserted and Collected');
  });

  await t.test('update, add-address, remove-address', async (t) => {
    const renamed = json<View>(await run(['contact', 'update', '--id', sato, '--name', PRIVATE.renamed, '--output', 'json']));
    t.match(renamed, { name: PRIVATE.renamed, note: PRIVATE.satoNote, addresses: [{ preferred: false }, { preferred: true }] }, 'the rest stays');

    const cleared = json<View>(await run(['contact', 'update', '--id', sato, '--clear-note', '--preferred', PRIVATE.satoWork, '--output', 'json']));
    t.equal(cleared.note, null);
    t.same(
      cleared.addresses.map((a) => a.preferred),
      [true, false],
    );

    const replaced = json<View>(
      await run(['contact', 'update', '--id', sato, '--address', PRIVATE.satoNew, '--address', PRIVATE.satoWork, '--output', 'json']),
    );
    t.same(replaced.addresses, [
      { address: PRIVATE.satoNew, preferred: false },
      { address: PRIVATE.satoWork, preferred: true },
    ]);
    const lost = await run(['contact', 'update', '--id', sato, '--address', PRIVATE.satoHome, '--address', PRIVATE.satoNew]);
    t.equal(lost.code, 2, 'the preferred address left out needs --preferred');
    t.match(lost.stderr, /--preferred is required: the contact's preferred address is not among the --address given/);
    t.equal((await run(['contact', 'update', '--id', sato])).code, 2, 'nothing to change');
    t.equal((await run(['contact', 'update', '--id', sato, '--note', 'x', '--clear-note'])).code, 2, 'contradiction');

    const added = json<View>(
      await run(['contact', 'add-address', '--id', sato, '--address', PRIVATE.satoHome, '--preferred', PRIVATE.satoHome, '--output', 'json']),
    );
    t.same(added.addresses, [
      { address: PRIVATE.satoNew, preferred: false },
      { address: PRIVATE.satoWork, preferred: false },
      { address: PRIVATE.satoHome, preferred: true },
    ]);
    const twice = await run(['contact', 'add-address', '--id', sato, '--address', PRIVATE.satoWork.toUpperCase()]);
    t.equal(twice.code, 1);
    t.match(twice.stderr, /already holds an address given with --address; nothing was changed/);

    const preferredGone = await run(['contact', 'remove-address', '--id', sato, '--address', PRIVATE.satoHome]);
    t.equal(preferredGone.code, 2);
    t.match(preferredGone.stderr, /--preferred is required: it names the new preferred address when the preferred one is removed/);
    const removed = json<View>(
      await run(['contact', 'remove-address', '--id', sato, '--address', PRIVATE.satoHome, '--preferred', PRIVATE.satoWork, '--output', 'json']),
    );
    t.same(removed.addresses, [
      { address: PRIVATE.satoNew, preferred: false },
      { address: PRIVATE.satoWork, preferred: true },
    ]);
    const table = await run(['contact', 'remove-address', '--id', sato, '--address', PRIVATE.satoNew]);
    t.equal(table.code, 0, table.stderr);
    t.match(table.stdout, new RegExp(`^Addresses\\s+${PRIVATE.satoWork} \\(preferred\\)$`, 'm'));
    const every = await run(['contact', 'remove-address', '--id', sato, '--address', PRIVATE.satoWork]);
    t.equal(every.code, 1);
    t.match(every.stderr, /A contact keeps at least one address.*use mailcairn contact delete/);
    const notHeld = await run(['contact', 'remove-address', '--id', sato, '--address', PRIVATE.missing]);
    t.equal(notHeld.code, 1);
    t.match(notHeld.stderr, /does not hold an address given with --address/);
  });

  await t.test('a collected contact is promoted before it is amended', async (t) => {
    const collectedId = json<{ contacts: View[] }>(await run(['contact', 'show', '--address', PRIVATE.collectedAddress, '--output', 'json'])).contacts[0]!.id;
    const puts = sent(`PUT /api/admin/contacts/${collectedId}`);
    const refused = await run(['contact', 'update', '--id', collectedId, '--note', PRIVATE.leeNote]);
    t.equal(refused.code, 1);
    t.match(refused.stderr, new RegExp(`Contact ${collectedId} is a collected contact, which cannot be amended in place: promote it first`));
    t.equal(sent(`PUT /api/admin/contacts/${collectedId}`), puts, 'no PUT was sent');

    const promoted = await run(['contact', 'promote', '--id', collectedId]);
    t.equal(promoted.code, 0, promoted.stderr);
    t.match(promoted.stdout, new RegExp(`^Contact ${collectedId} is an asserted contact`));
    t.match(promoted.stdout, /^Origin\s+Asserted$/m);
    t.match(json<View>(await run(['contact', 'promote', '--id', collectedId, '--output', 'json'])), { origin: 'Asserted' }, 'idempotent');
    t.match(json<View>(await run(['contact', 'update', '--id', collectedId, '--name', PRIVATE.collectedName, '--output', 'json'])), {
      origin: 'Asserted',
    });
    t.equal((await run(['contact', 'promote', '--id', 'c999999'])).code, 1);
  });

  await t.test('last writer wins; an edit racing an erasure finds nothing', async (t) => {
    // Hold the PUT at the proxy, write meanwhile, then let it through.
    proxy.delay(`/api/admin/contacts/${lee}`, 1_500);
    const put = `PUT /api/admin/contacts/${lee}`;
    const before = sent(put);
    const pending = run(['contact', 'update', '--id', lee, '--name', PRIVATE.renamed]);
    await until(() => sent(put) > before, 30_000, 'the PUT to arrive');
    replace(db, lee, { name: PRIVATE.raced, addresses: [{ address: PRIVATE.leeAddress, preferred: true }], note: null }, Date.now());
    const raced = await pending;
    t.equal(raced.code, 0, raced.stderr);
    const stored = contactById(db, lee);
    t.equal(stored?.name, PRIVATE.renamed, 'the later write stands');
    t.equal(stored?.note, PRIVATE.leeNote, 'with the whole record the client read, the note included');

    const again = sent(put);
    const erased = run(['contact', 'update', '--id', lee, '--note', PRIVATE.satoNote]);
    await until(() => sent(put) > again, 30_000, 'the PUT to arrive');
    erase(db, lee);
    const gone = await erased;
    proxy.delay(`/api/admin/contacts/${lee}`, 0);
    t.equal(gone.code, 1);
    t.match(gone.stderr, /Not found: The book holds no contact by that identifier.*Nothing was changed\./);
    t.equal(contactById(db, lee), undefined, 'nothing came back');
  });

  await t.test('export', async (t) => {
    const exported = await run(['contact', 'export', '--id', sato]);
    t.equal(exported.code, 0, exported.stderr);
    const document = JSON.parse(exported.stdout) as { exportedAt: string; contact: View };
    t.match(document, { exportedAt: /^\d{4}-\d\d-\d\dT/, contact: { id: sato, name: PRIVATE.renamed, origin: 'Asserted' } });
    t.same(JSON.parse((await run(['contact', 'export', '--id', sato, '--output', 'json'])).stdout).contact, document.contact, 'the same document');
    const none = await run(['contact', 'export', '--id', 'c999999']);
    t.equal(none.code, 1);
    t.equal(none.stdout, '');
  });

  await t.test('delete: the reading, then only --yes agrees', async (t) => {
    const del = `DELETE /api/admin/contacts/${sato}`;
    const refused = await run(['contact', 'delete', '--id', sato], 'y\n');
    t.equal(refused.code, 1);
    t.match(refused.stdout, new RegExp(`^Erasing contact ${sato} \\(Asserted, 1 address\\) removes the person and everything derived from them`));
    t.match(refused.stderr, /Refused: this needs a confirmation, standard input is not a terminal, and piped input never answers one; pass --yes to agree\./);
    t.equal(sent(del), 0, 'no DELETE was sent');
    t.ok(contactById(db, sato), 'the contact stays');

    const done = await run(['contact', 'delete', '--id', sato, '--yes']);
    t.equal(done.code, 0, done.stderr);
    t.match(done.stdout, new RegExp(`Erased contact ${sato}: 1 contact record\\(s\\) with 1 address\\(es\\)\\.`));
    t.equal(contactById(db, sato), undefined);

    const deletes = proxy.requests.filter((r) => r.startsWith('DELETE ')).length;
    const absent = await run(['contact', 'delete', '--id', sato, '--output', 'json'], '');
    t.same(json(absent), { id: sato, found: false, contacts: 0, addresses: 0 }, 'what the book does not hold: done, nothing removed');
    t.equal(proxy.requests.filter((r) => r.startsWith('DELETE ')).length, deletes, 'and nothing sent to erase');
  });

  await t.test('delete-collected: the counts, then only --yes agrees', async (t) => {
    const refused = await run(['contact', 'delete-collected']);
    t.equal(refused.code, 1);
    t.match(refused.stdout, /^The book holds 2 collected contact\(s\) with 2 address\(es\)\. Erasing them keeps every asserted contact\./);
    t.match(refused.stderr, /pass --yes to agree/);
    t.equal(sent('DELETE /api/admin/contacts/collected'), 0);

    const done = json<{ contacts: number; addresses: number }>(await run(['contact', 'delete-collected', '--yes', '--output', 'json']));
    t.same(done, { contacts: 2, addresses: 2 });
    const left = json<{ contacts: View[] }>(await run(['contact', 'list', '--output', 'json']));
    t.same(
      left.contacts.map((c) => c.origin),
      ['Asserted'],
      'the asserted contact stays',
    );

    const nothing = await run(['contact', 'delete-collected']);
    t.equal(nothing.code, 0, nothing.stderr);
    t.match(nothing.stdout, /The book holds no collected contact; nothing was erased\./);
    t.equal(sent('DELETE /api/admin/contacts/collected'), 1, 'nothing more was sent');
  });

  await t.test(
    'delete on a terminal: a "no" erases nothing, a "yes" erases',
    { skip: spawnSync('script', ['--version']).status !== 0 && 'util-linux script is not installed' },
    async (t) => {
      const id = json<View>(await run(['contact', 'create', '--name', PRIVATE.lee, '--address', PRIVATE.leeAddress, '--output', 'json'])).id;
      const declined = await onTerminal(home, ['contact', 'delete', '--id', id], [{ after: /\[y\/N\] /, send: 'n\r' }]);
      t.equal(declined.code, 1, declined.screen);
      t.match(declined.screen, new RegExp(`Erase contact ${id} \\(Asserted, 1 address\\) and everything derived from them\\? This cannot be undone\\.`));
      t.match(declined.screen, /Not confirmed; nothing was changed\./);
      t.ok(contactById(db, id));
      t.same(leaks(Object.values(PRIVATE), declined.screen), [], 'the question names no one');
      const agreed = await onTerminal(home, ['contact', 'delete', '--id', id], [{ after: /\[y\/N\] /, send: 'y\r' }]);
      t.equal(agreed.code, 0, agreed.screen);
      t.equal(contactById(db, id), undefined);
    },
  );

  await t.test('a credential without service.admin.audit.read', async (t) => {
    const reader = cliHome(t);
    t.equal((await loginWithKey(reader, proxy.url, svc.keys.reader)).code, 0);
    const list = await cli(reader, ['contact', 'list']);
    t.equal(list.code, 1);
    t.match(list.stderr, /does not hold the permission service\.admin\.audit\.read/);
    const del = await cli(reader, ['contact', 'delete', '--id', 'c1', '--yes']);
    t.equal(del.code, 1, 'the reading before the erasure needs it too');
    results.push({ command: 'list', result: list }, { command: 'delete', result: del });
  });

  const values = Object.values(PRIVATE);
  t.same(leaks(values, ...results.flatMap(({ result }) => [result.stderr])), [], 'no name, address or note on standard error');
  t.same(
    leaks(values, ...results.filter(({ command }) => !SHOWING.has(command)).map(({ result }) => result.stdout)),
    [],
    'nor in the output of a command that does not show contacts',
  );
  t.same(leaks(values, svc.logs.raw()), [], 'nor in the service log');
  t.same(leaks(svc.secrets, ...results.flatMap(({ result }) => [result.stdout, result.stderr])), [], 'no key in any output');
});
