/**
 * Crash safety of the mail rules' arrival stage with a real mailcairnd
 * killed with SIGKILL (the counterpart of kill9.test.ts, which covers a
 * rule run): mail arrives while the daemon runs with `MailRules:Enabled`,
 * the stage records the changes a rule asks while the mail server cannot
 * be written to (the fault proxy refuses the journal's writing session),
 * the daemon is killed between record and apply, and the store is put back
 * to the moment just after the records were answered and before the stage
 * wrote its conclusions (the arrival history rows and the cursor past the
 * messages undone: the window a kill can hit). After a restart the stage
 * judges those messages again, its repeated asks are answered with the
 * same jobs, and the server ends with each change once: one `applied`
 * audit entry per change under the rule's name, the flag and keyword on
 * the message, one history row per conclusion, the cursor past the mail.
 * No log line of either daemon names the rule, its condition's value, the
 * keyword, a subject or an address.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { startFaultProxy } from '../../harness/fault-proxy.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { adminEndpointSection } from '../../helpers/admin-client.ts';
import { compiledDaemon, listenerPort, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { eventually } from '../../helpers/eventually.ts';
import { readRows as query, writeRows as write } from '../../helpers/database.ts';

t.setTimeout(900_000);

type Json = Record<string, any>;
const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
const RULE = 'flag-kestrel-arrivals';
const REQUESTER = `mailcairn:rule:${RULE}`;
const KEYWORD = 'kw-ptarmigan';
/** Messages arriving after the daemon started: the odd ones come from the rule's domain. */
const ARRIVING = 4;

function message(n: number): Buffer {
  const from = n % 2 === 1 ? `alerts${n}@monitor-kestrel.example.net` : `friend${n}@other-plover.example.org`;
  return Buffer.from(
    [
      `From: Sender <${from}>`,
      'To: Ann Owner <ann.owner@example.org>',
      `Subject: Arrival kill nine ${n}`,
      `Message-ID: <rka-${n}@example.org>`,
      'Date: Mon, 02 Nov 2026 10:00:00 +0000',
      '',
      `Body ${n}.`,
      '',
    ].join('\r\n'),
  );
}

const _sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const changes = (database: string): Json[] =>
  query(
    database,
    "SELECT id, state, json_extract(payload, '$.requester') AS requester, json_extract(payload, '$.messageId') AS messageId FROM jobs WHERE type = 'mailbox-change' ORDER BY id",
  );

/** The stored id of each placed message, by its number in the Message-ID. */
const storedIds = (database: string): Map<number, number> =>
  new Map(
    query(database, "SELECT id, header_message_id AS mid FROM messages WHERE account_id = 'ann' AND state = 'stored' AND derived_at IS NOT NULL").map((r) => [
      Number(/rka-(\d+)@/.exec(String(r.mid))?.[1]),
      r.id as number,
    ]),
  );

const cursor = (database: string): number | undefined =>
  query(database, "SELECT last_message_id FROM mail_rule_cursors WHERE account_id = 'ann'")[0]?.last_message_id as number | undefined;

t.test('kill -9 between record and apply on arrival, and before the conclusions: each change once after the restart', async (t) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());
  // One message before the daemon starts: the first mirror, judged on arrival (no rule matches it).
  await appendMessages(dovecot, 'ann', 'INBOX', [{ raw: message(0) }]);
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => proxy.close());
  const database = join(dir, 'mailcairn.db');
  writeFileSync(join(dir, 'pw'), 'pw-ann');
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS),
    MailSynchronization: { Interval: '01:00:00' },
    // Debug lines too: the privacy check reads every line the stage writes.
    Logging: { Level: 'debug' },
    MailRules: {
      Enabled: true,
      Rules: [{ Name: RULE, When: { SenderDomain: 'monitor-kestrel.example.net' }, Then: { MarkFlagged: true, AddKeywords: [KEYWORD] } }],
    },
    Accounts: [
      {
        Id: 'ann',
        Imap: { Host: '127.0.0.1', Port: proxy.port, Security: 'None', Username: 'ann', Password: `file:${join(dir, 'pw')}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const compiled = await compiledDaemon();
  const live = new Set<ReturnType<typeof spawnDaemon>>();
  const spawned: Array<ReturnType<typeof spawnDaemon>> = [];
  t.teardown(async () => {
    for (const d of live) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  });
  const start = async (): Promise<ReturnType<typeof spawnDaemon>> => {
    const daemon = spawnDaemon(['--config', config], { compiled });
    live.add(daemon);
    spawned.push(daemon);
    await listenerPort(daemon, 'AdminEndpoint', 180_000);
    await eventually('service.ready', () => daemon.lines().some((l) => l.event === 'service.ready') || daemon.child.exitCode !== null, 180_000);
    if (daemon.child.exitCode !== null) throw new Error(`mailcairnd exited: ${daemon.stderr()}`);
    return daemon;
  };
  const kill = async (daemon: ReturnType<typeof spawnDaemon>): Promise<void> => {
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    live.delete(daemon);
  };

  const first = await start();
  const before = await eventually('the first mirror', () => storedIds(database).get(0));
  await eventually('the first run to end', () => query(database, 'SELECT id FROM sync_runs WHERE ended_at IS NULL').length === 0);
  await eventually('the stage to judge the first mirror', () => cursor(database) === before);
  // From now on nothing reaches the server but the reading session already open (IDLE sees the new mail):
  // the journal's writing session is opened on demand, through the proxy.
  proxy.refuse(true);
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    Array.from({ length: ARRIVING }, (_, i) => ({ raw: message(i + 1) })),
  );
  const ids = await eventually('the arrivals mirrored', () => {
    const found = storedIds(database);
    return found.size === ARRIVING + 1 ? found : null;
  });
  const arrived = Array.from({ length: ARRIVING }, (_, i) => ids.get(i + 1)!);
  t.ok(
    arrived.every((id) => id > before),
    'stored after the first mirror',
  );
  const last = Math.max(...arrived);
  await eventually('the stage to record the changes', () => changes(database).length === 4);
  await eventually('the stage to conclude the arrivals', () => cursor(database) === last);
  await eventually(
    'an attempt to fail on the refused connection',
    () => query(database, "SELECT id FROM jobs WHERE type = 'mailbox-change' AND attempt_count > 0").length > 0,
  );
  await kill(first);

  const recorded = changes(database);
  t.ok(
    recorded.every((c) => c.state === 'queued' || c.state === 'running'),
    'recorded, none applied',
  );
  t.ok(
    recorded.every((c) => c.requester === REQUESTER),
    "under the rule's name",
  );
  t.same(
    [...new Set(recorded.map((c) => c.messageId))].sort((a, b) => a - b),
    [ids.get(1), ids.get(3)],
    'for the two messages the rule matches',
  );
  t.same(query(database, 'SELECT id FROM mutation_audit'), [], 'nothing audited');
  t.same(query(database, 'SELECT id FROM mail_rule_runs'), [], 'no rule run: arrival alone');
  const arrivalHistory = (): Json[] =>
    query(
      database,
      `SELECT rule_name, rule_position, message_id, job_ids, note FROM mail_rule_history
        WHERE run_id IS NULL AND message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id`,
      [JSON.stringify(arrived)],
    );
  const historyBefore = arrivalHistory();
  t.same(
    historyBefore.map((h) => h.message_id),
    [ids.get(1), ids.get(3)],
    'two conclusions (messages 1 and 3)',
  );
  // The moment just after the records were answered and before the stage wrote anything: its conclusions and cursor undone.
  write(database, 'DELETE FROM mail_rule_history WHERE run_id IS NULL AND message_id IN (SELECT value FROM json_each(?))', [JSON.stringify(arrived)]);
  write(database, "UPDATE mail_rule_cursors SET last_message_id = ? WHERE account_id = 'ann'", [before]);
  t.equal(cursor(database), before, 'the cursor back before the arrivals');

  proxy.refuse(false);
  const second = await start();
  await eventually('the stage to conclude the arrivals again', () => cursor(database) === last && arrivalHistory().length === 2, 180_000);
  await eventually('every change applied', () => changes(database).every((c) => c.state === 'done'), 180_000);
  t.same(
    changes(database).map((c) => c.id),
    recorded.map((c) => c.id),
    'the repeated asks were answered with the same jobs: nothing recorded twice',
  );
  t.same(arrivalHistory(), historyBefore, 'the same conclusions, once each, naming the same jobs');
  t.same(query(database, 'SELECT count(*) AS n FROM mail_rule_history')[0]?.n, 2, 'no other history row');
  t.ok((cursor(database) ?? 0) >= last, 'the cursor past the arrivals');
  const audit = query(database, 'SELECT mutation, message_id, requester, outcome FROM mutation_audit ORDER BY id');
  t.equal(audit.length, 4, 'one audit entry per change');
  t.ok(
    audit.every((a) => a.outcome === 'applied' && a.requester === REQUESTER),
    'each applied, under the rule',
  );
  for (const n of [1, 3]) t.equal(audit.filter((a) => a.message_id === ids.get(n)).length, 2, `two changes audited for message ${n}`);
  const onServer = await withImap(dovecot, 'ann', async (client) => {
    await client.mailboxOpen('INBOX', { readOnly: true });
    const found = new Map<number, string[]>();
    for await (const m of client.fetch('1:*', { envelope: true, flags: true })) {
      found.set(Number(/rka-(\d+)@/.exec(m.envelope?.messageId ?? '')?.[1]), [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort());
    }
    return found;
  });
  t.same(onServer.get(1), ['\\Flagged', KEYWORD].sort());
  t.same(onServer.get(3), ['\\Flagged', KEYWORD].sort());
  t.same(onServer.get(0), [], 'the first mirror is untouched');
  t.same(onServer.get(2), [], 'a message no rule matched is untouched');
  t.same(onServer.get(4), []);
  t.equal(onServer.size, ARRIVING + 1, 'no message placed twice');
  await kill(second);

  const logs = spawned
    .map((d) => `${d.stdout()}\n${d.stderr()}`)
    .join('\n')
    .toLowerCase();
  t.ok(
    spawned.every((d) => d.lines().some((l) => l.event === 'mail-rules.concluded')),
    'the debug lines were written (the check below reads them)',
  );
  const secrets = [RULE, 'monitor-kestrel', KEYWORD, 'ptarmigan', ...sensitiveStrings(Array.from({ length: ARRIVING + 1 }, (_, n) => message(n)))];
  for (const secret of secrets) t.notOk(logs.includes(secret.toLowerCase()), `no log line names ${JSON.stringify(secret)}`);
});
