/**
 * Crash safety of mail rules with a real mailcairnd killed with SIGKILL:
 * a rule run records its changes while the mail server cannot be reached
 * (the fault proxy refuses the journal's writing session), the daemon is
 * killed between record and apply, and the store is put back to the moment
 * just after the records were answered and before the run wrote its
 * conclusions (its history rows and position undone: the window a kill can
 * hit). After a restart the run resumes from its position, its repeated
 * asks are answered with the same jobs, and the server ends with each
 * change once: one `applied` audit entry per change under the rule's name,
 * the flag and keyword on the message, one history row per conclusion.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { startFaultProxy } from '../../harness/fault-proxy.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { adminCall, adminEndpointSection } from '../../helpers/admin-client.ts';
import { compiledDaemon, listenerPort, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { eventually } from '../../helpers/eventually.ts';
import { readRows as query, writeRows as write } from '../../helpers/database.ts';

t.setTimeout(900_000);

type Json = Record<string, any>;
const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
const MESSAGES = 4;

function message(n: number): Buffer {
  const from = n % 2 === 1 ? `alerts${n}@monitor-kestrel.example.net` : `friend${n}@other.example.org`;
  return Buffer.from(
    [
      `From: Sender <${from}>`,
      'To: Ann Owner <ann.owner@example.org>',
      `Subject: Rules kill nine ${n}`,
      `Message-ID: <rk9-${n}@example.org>`,
      'Date: Mon, 02 Nov 2026 10:00:00 +0000',
      '',
      `Body ${n}.`,
      '',
    ].join('\r\n'),
  );
}

const _sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const changes = (database: string): Json[] =>
  query(database, "SELECT id, state, json_extract(payload, '$.requester') AS requester FROM jobs WHERE type = 'mailbox-change' ORDER BY id");

t.test('kill -9 between record and apply, and before the conclusions: each change once after the restart, the run resumed', async (t) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    Array.from({ length: MESSAGES }, (_, i) => ({ raw: message(i + 1) })),
  );
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => proxy.close());
  const database = join(dir, 'mailcairn.db');
  writeFileSync(join(dir, 'pw'), 'pw-ann');
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS),
    MailSynchronization: { Interval: '01:00:00' },
    // Arrival off: the run alone records, so what it asked is all there is.
    MailRules: {
      Enabled: false,
      Rules: [{ Name: 'flag-kestrel-alerts', When: { SenderDomain: 'monitor-kestrel.example.net' }, Then: { MarkFlagged: true, AddKeywords: ['alert'] } }],
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
  t.teardown(async () => {
    for (const d of live) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  });
  const start = async (): Promise<{ daemon: ReturnType<typeof spawnDaemon>; admin: string }> => {
    const daemon = spawnDaemon(['--config', config], { compiled });
    live.add(daemon);
    const port = await listenerPort(daemon, 'AdminEndpoint', 180_000);
    await eventually('service.ready', () => daemon.lines().some((l) => l.event === 'service.ready') || daemon.child.exitCode !== null, 180_000);
    if (daemon.child.exitCode !== null) throw new Error(`mailcairnd exited: ${daemon.stderr()}`);
    return { daemon, admin: `http://127.0.0.1:${port}/api/admin` };
  };
  const kill = async (daemon: ReturnType<typeof spawnDaemon>): Promise<void> => {
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    live.delete(daemon);
  };

  const first = await start();
  await eventually('the first mirror', () => query(database, "SELECT id FROM messages WHERE derived_at IS NOT NULL AND state = 'stored'").length === MESSAGES);
  await eventually('the first run to end', () => query(database, 'SELECT id FROM sync_runs WHERE ended_at IS NULL').length === 0);
  // From now on nothing reaches the server: the journal's writing session is opened on demand, through the proxy.
  proxy.refuse(true);
  const asked = await adminCall(`${first.admin}/rules/runs`, { method: 'POST', apiKey: ADMIN_KEYS.operator, json: { account: 'ann' } });
  t.equal(asked.status, 200, asked.body);
  const runId = asked.json().run.runId as number;
  await eventually('the run to record its changes', () => changes(database).length === 4);
  await eventually(
    'an attempt to fail on the refused connection',
    () => query(database, "SELECT id FROM jobs WHERE type = 'mailbox-change' AND attempt_count > 0").length > 0,
  );
  await kill(first.daemon);

  const recorded = changes(database);
  t.ok(
    recorded.every((c) => c.state === 'queued' || c.state === 'running'),
    'recorded, none applied',
  );
  t.ok(
    recorded.every((c) => c.requester === 'mailcairn:rule:flag-kestrel-alerts'),
    "under the rule's name",
  );
  t.same(query(database, 'SELECT id FROM mutation_audit'), [], 'nothing audited');
  const historyBefore = query(database, 'SELECT rule_name, message_id, job_ids FROM mail_rule_history WHERE run_id = ? ORDER BY message_id', [runId]);
  t.equal(historyBefore.length, 2, 'two conclusions (messages 1 and 3)');
  // The moment just after the records were answered and before the run wrote anything: its conclusions and position undone.
  write(database, 'DELETE FROM mail_rule_history WHERE run_id = ?', [runId]);
  write(
    database,
    'UPDATE mail_rule_runs SET last_message_id = 0, judged_count = 0, matched_count = 0, change_count = 0, ended_at = NULL, outcome = NULL WHERE id = ?',
    [runId],
  );

  proxy.refuse(false);
  const second = await start();
  const status = await eventually('the resumed run to end', async () => {
    const answer = (await adminCall(`${second.admin}/rules/runs?account=ann`, { apiKey: ADMIN_KEYS.operator })).json();
    return answer.run?.isOutstanding === false ? answer.run : null;
  });
  t.match(status, { runId, judgedEmailCount: MESSAGES, matchedEmailCount: 2, changeCount: 4, outcome: 'completed' }, 'the same run, resumed from its position');
  await eventually('every change applied', () => changes(database).every((c) => c.state === 'done'));
  t.same(
    changes(database).map((c) => c.id),
    recorded.map((c) => c.id),
    'the repeated asks were answered with the same jobs: nothing recorded twice',
  );
  const historyAfter = query(database, 'SELECT rule_name, message_id, job_ids FROM mail_rule_history WHERE run_id = ? ORDER BY message_id', [runId]);
  t.same(historyAfter, historyBefore, 'the same conclusions, once each, naming the same jobs');
  const audit = query(database, 'SELECT mutation, requester, outcome FROM mutation_audit ORDER BY id');
  t.equal(audit.length, 4, 'one audit entry per change');
  t.ok(
    audit.every((a) => a.outcome === 'applied' && a.requester === 'mailcairn:rule:flag-kestrel-alerts'),
    'each applied, under the rule',
  );
  const onServer = await withImap(dovecot, 'ann', async (client) => {
    await client.mailboxOpen('INBOX', { readOnly: true });
    const found = new Map<number, string[]>();
    for await (const m of client.fetch('1:*', { envelope: true, flags: true })) {
      found.set(Number(/rk9-(\d+)@/.exec(m.envelope?.messageId ?? '')?.[1]), [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort());
    }
    return found;
  });
  t.same(onServer.get(1), ['\\Flagged', 'alert'].sort());
  t.same(onServer.get(3), ['\\Flagged', 'alert'].sort());
  t.same(onServer.get(2), [], 'a message no rule matched is untouched');
  t.same(onServer.get(4), []);
  t.equal(onServer.size, MESSAGES, 'no message placed twice');
  await kill(second.daemon);
});
