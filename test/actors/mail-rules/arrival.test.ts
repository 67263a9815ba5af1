/**
 * Mail rules end to end on a real Dovecot (issue 32): each condition and
 * action on arriving mail, read back over IMAP, each change applied once
 * (one `applied` audit entry, the requester `mailcairn:rule:<Name>`); run order and
 * stop-on-move; a move into a folder the server refuses dead-lettered under
 * the rule's name; mail in the sent folder never judged; a rule run over
 * stored mail and its status; the history pages under the audit rules; the
 * listing and its comparison with the file on disk; and no subject,
 * address, rule name, condition value or keyword in any log line.
 */
import { chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin, mailboxDir } from '../../harness/doveadm.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { adminCall, adminEndpointSection, query } from '../../helpers/admin-client.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';
import { eventually } from '../../helpers/eventually.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;
const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
const ACL_CONFIG = 'mail_plugins = $mail_plugins acl\nprotocol imap {\n  mail_plugins = $mail_plugins acl imap_acl\n}\nplugin {\n  acl = vfile\n}\n';

/** Rule names, condition values and keywords distinctive enough to search logs for. */
const RULES = [
  { Name: 'rule-zanzibar-seen', When: { SubjectContains: 'ZANZIBAR' }, Then: { MarkSeen: true } },
  { Name: 'rule-boss-flag', When: { SenderAddress: 'Chief.Quibble@Example.COM' }, Then: { MarkFlagged: true, AddKeywords: ['KW-Quokka'] } },
  { Name: 'rule-letters-file', When: { SenderDomain: 'letters-wombat.example.net' }, Then: { MoveTo: 'news', AddKeywords: ['kw-platypus'] } },
  { Name: 'rule-after-move', When: { SenderDomain: 'letters-wombat.example.net' }, Then: { MarkFlagged: true } },
  { Name: 'rule-work-invoice', When: { Folder: 'work', SubjectContains: 'numbat invoice' }, Then: { AddKeywords: ['kw-numbat'] } },
  { Name: 'rule-refused-move', When: { SubjectContains: 'echidna' }, Then: { MoveTo: 'locked' } },
];
const PRIVATE = [
  ...RULES.map((r) => r.Name),
  'zanzibar',
  'ZANZIBAR',
  'Chief.Quibble',
  'chief.quibble',
  'letters-wombat',
  'numbat',
  'echidna',
  'quokka',
  'platypus',
];

function message(id: string, from: string, subject: string): Buffer {
  return Buffer.from(
    [
      `From: Sender ${id} <${from}>`,
      'To: Ann Owner <ann.owner@example.org>',
      `Subject: ${subject}`,
      `Message-ID: <${id}@rules.example.org>`,
      'Date: Mon, 02 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Body of ${id}.`,
      '',
    ].join('\r\n'),
  );
}

const MAIL = {
  boss: message('boss', 'chief.quibble@example.com', 'The Zanzibar plan, for review'),
  letter: message('letter', 'digest@letters-wombat.example.net', 'Zanzibar weekly letter'),
  invoice: message('invoice', 'accounts@supplier.example.org', 'Your numbat invoice 42'),
  plain: message('plain', 'friend@other.example.org', 'Lunch on Thursday?'),
  refused: message('refused', 'friend@other.example.org', 'Echidna sighting'),
  sent: message('sent', 'chief.quibble@example.com', 'Zanzibar reply sent by the owner'),
  later: message('later', 'chief.quibble@example.com', 'Zanzibar follow-up'),
};

type Setup = { dovecot: Dovecot; sync: SyncService; admin: string; dir: string; configFile: string };

async function setup(t: Test): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }], extraConfig: ACL_CONFIG });
  t.teardown(() => dovecot.stop());
  const mail = mailAdmin(dovecot);
  for (const folder of ['Work', 'News', 'Sent', 'Locked']) await mail.createMailbox('ann', folder);
  // Locked: the owner may look and read, never insert (a move into it is refused).
  const locked = mailboxDir(dovecot, 'ann', 'Locked');
  writeFileSync(join(locked, 'dovecot-acl'), 'owner lr\n');
  const owner = statSync(locked);
  chownSync(join(locked, 'dovecot-acl'), owner.uid, owner.gid);
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    [MAIL.boss, MAIL.letter, MAIL.plain, MAIL.refused].map((raw) => ({ raw })),
  );
  await appendMessages(dovecot, 'ann', 'Work', [{ raw: MAIL.invoice }]);
  await appendMessages(dovecot, 'ann', 'Sent', [{ raw: MAIL.sent }]);
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      {
        id: 'ann',
        user: 'ann',
        folders: [
          { Alias: 'inbox' },
          { Alias: 'work', Path: 'Work' },
          { Alias: 'news', Path: 'News' },
          { Alias: 'sent', Path: 'Sent' },
          { Alias: 'locked', Path: 'Locked' },
        ],
      },
    ],
    {
      AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS),
      MailRules: { Enabled: true, Rules: RULES },
      MailSynchronization: { Interval: '01:00:00' },
      // Debug lines too: the privacy check reads every line the stage writes.
      Logging: { Level: 'debug' },
    },
  );
  t.teardown(() => sync.service.stop());
  return { dovecot, sync, admin: `http://127.0.0.1:${sync.service.admin!.port}/api/admin`, dir, configFile: join(dir, 'mailcairn.json') };
}

/** Every message of a server folder by its Message-ID: flags and keywords as the server holds them. */
async function onServer(dovecot: Dovecot, mailbox: string): Promise<Map<string, string[]>> {
  return withImap(dovecot, 'ann', async (client) => {
    await client.mailboxOpen(mailbox, { readOnly: true });
    const found = new Map<string, string[]>();
    for await (const m of client.fetch('1:*', { envelope: true, flags: true })) {
      const id = m.envelope?.messageId ?? '';
      found.set(id.replace(/^<|@rules\.example\.org>$/g, ''), [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort());
    }
    return found;
  });
}

function rows(database: string, sql: string, params: unknown[] = []): Json[] {
  const db = new Libsql(database, { readonly: true });
  try {
    return db.prepare(sql).all(params) as Json[];
  } finally {
    db.close();
  }
}

/** No outstanding change left in the journal. */
function journalQuiet(database: string): boolean {
  return rows(database, "SELECT id FROM jobs WHERE type = 'mailbox-change' AND state IN ('queued', 'running')").length === 0;
}

async function expected(s: Setup): Promise<void> {
  const inbox = await onServer(s.dovecot, 'INBOX');
  const news = await onServer(s.dovecot, 'News');
  const work = await onServer(s.dovecot, 'Work');
  const sent = await onServer(s.dovecot, 'Sent');
  t.same(
    inbox.get('boss'),
    ['$Seen', '\\Flagged', '\\Seen', 'kw-quokka'].filter((f) => f !== '$Seen').sort(),
    'subject and address: seen, flagged, keyword (folded)',
  );
  t.notOk(inbox.has('letter'), 'the newsletter left INBOX');
  t.same(news.get('letter'), ['\\Seen', 'kw-platypus'].sort(), 'moved once, seen by the earlier rule, keyword of its own rule, never flagged (stop-on-move)');
  t.same(work.get('invoice'), ['kw-numbat'], 'folder and subject together');
  t.same(inbox.get('plain'), [], 'a message no rule matches is untouched');
  t.same(inbox.get('refused'), [], 'a refused move leaves the message where it was');
  t.same(sent.get('sent'), [], 'mail in the sent folder is never judged');
}

t.test('rules on arriving mail, on the server exactly once; runs; history; listing; privacy', async (t) => {
  const s = await setup(t);
  const { sync, admin } = s;
  const operator = ADMIN_KEYS.operator;
  await sync.syncNow('ann');
  await eventually('the rules to conclude and the journal to apply', async () => {
    const concluded = rows(sync.database, 'SELECT id FROM mail_rule_history').length;
    return concluded >= 6 && journalQuiet(sync.database) ? true : null;
  });
  // The move was recorded and applied: a run for the moved message's new place lands it in the mirror again.
  await sync.syncNow('ann');
  await expected(s);

  // Exactly once: one applied audit entry per change, under the rule's name.
  const audit = rows(sync.database, 'SELECT mutation, requester, outcome, detail FROM mutation_audit ORDER BY id');
  const byRule = (requester: string) => audit.filter((a) => a.requester === requester).map((a) => `${a.mutation}:${a.outcome}`);
  t.same(byRule('mailcairn:rule:rule-zanzibar-seen').sort(), ['set-seen:applied', 'set-seen:applied'], 'seen on the two zanzibar messages in received folders');
  t.same(byRule('mailcairn:rule:rule-boss-flag'), ['set-flagged:applied', 'add-keywords:applied']);
  t.same(byRule('mailcairn:rule:rule-letters-file'), ['add-keywords:applied', 'relocate:applied']);
  t.same(byRule('mailcairn:rule:rule-after-move'), [], 'the rule after a move is never judged');
  t.same(byRule('mailcairn:rule:rule-work-invoice'), ['add-keywords:applied']);
  t.same(byRule('mailcairn:rule:rule-refused-move'), ['relocate:refused'], 'the refused move is audited under the rule');

  // The refused move is dead-lettered; the dead letter is listed and the audit names the rule.
  const dead = (await adminCall(`${admin}/jobs/dead-letters${query({ type: 'mailbox-change', account: 'ann' })}`, { apiKey: operator })).json();
  t.equal(dead.jobs.length, 1, 'one dead letter');
  t.match(dead.jobs[0], { type: 'mailbox-change', account: 'ann', failureClassification: 'server-refused' });
  const audited = (await adminCall(`${admin}/mailbox/mutations/audit${query({ account: 'ann', mutation: 'relocate' })}`, { apiKey: operator })).json();
  t.ok(
    audited.entries.some((e: Json) => e.requester === 'mailcairn:rule:rule-refused-move' && e.outcome === 'refused' && e.targetFolderPath === 'Locked'),
    'the audit names the rule as requester',
  );

  // Arriving later: judged on arrival, once.
  await appendMessages(s.dovecot, 'ann', 'INBOX', [{ raw: MAIL.later }]);
  await sync.syncNow('ann');
  await eventually('the later arrival to be applied', async () => {
    const flags = (await onServer(s.dovecot, 'INBOX')).get('later');
    return flags?.includes('\\Flagged') && flags.includes('\\Seen') && flags.includes('kw-quokka') && journalQuiet(sync.database);
  });

  // History: every conclusion, newest first, walked by cursor; the rule, what it asked, the changes' outcomes.
  const all = rows(sync.database, 'SELECT id FROM mail_rule_history');
  const seen: Json[] = [];
  let cursor: string | undefined;
  do {
    const page = await adminCall(`${admin}/rules/history${query({ account: 'ann', pageSize: 2, cursor })}`, { apiKey: operator });
    t.equal(page.status, 200, page.body);
    const body = page.json();
    seen.push(...body.entries);
    cursor = body.nextCursor;
    t.ok(body.entries.length <= 2);
  } while (cursor !== undefined);
  t.equal(seen.length, all.length, 'the walk returns every conclusion');
  t.same(
    seen.map((e) => e.id),
    [...seen.map((e) => e.id)].sort((a, b) => b - a),
    'newest first',
  );
  const refusedEntry = seen.find((e) => e.rule === 'rule-refused-move')!;
  t.match(refusedEntry, {
    source: 'Arrival',
    asked: { moveTo: 'locked' },
    note: null,
    changes: [{ change: 'relocate', state: 'dead-lettered', outcome: 'refused' }],
  });
  const letterEntry = seen.find((e) => e.rule === 'rule-letters-file')!;
  t.match(letterEntry.changes, [
    { change: 'add-keywords', state: 'completed', outcome: 'applied' },
    { change: 'relocate', state: 'completed', outcome: 'applied' },
  ]);
  // A cursor is bound to its filters; pageSize alone may change; the history is an audit read.
  const first = (await adminCall(`${admin}/rules/history${query({ account: 'ann', pageSize: 1 })}`, { apiKey: operator })).json();
  const other = await adminCall(`${admin}/rules/history${query({ account: 'ann', pageSize: 1, from: '2020-01-01T00:00:00Z', cursor: first.nextCursor })}`, {
    apiKey: operator,
  });
  t.equal(other.status, 400, 'a cursor under other filters is refused');
  const resized = await adminCall(`${admin}/rules/history${query({ account: 'ann', pageSize: 3, cursor: first.nextCursor })}`, { apiKey: operator });
  t.equal(resized.status, 200, 'changing only pageSize is allowed');
  t.equal(
    (await adminCall(`${admin}/rules/history${query({ account: 'ann' })}`, { apiKey: ADMIN_KEYS.reader })).status,
    403,
    'audit read is its own permission',
  );
  t.equal((await adminCall(`${admin}/rules/history${query({ account: 'nobody' })}`, { apiKey: operator })).status, 400, 'an unconfigured account');
  t.equal((await adminCall(`${admin}/rules/history`, { apiKey: operator })).status, 400, 'account is required');
  const future = await adminCall(`${admin}/rules/history${query({ account: 'ann', from: '2100-01-01T00:00:00Z' })}`, { apiKey: operator });
  t.same(future.json(), { entries: [] }, 'the range filters apply to when the conclusion was written');

  // The listing: rules in run order, and the file on disk compared.
  const listed = (await adminCall(`${admin}/rules`, { apiKey: ADMIN_KEYS.reader })).json();
  t.same(
    listed.rules.map((r: Json) => [r.position, r.name]),
    RULES.map((r, i) => [i + 1, r.Name]),
    'run order',
  );
  t.same(listed.rules[2].actions, { MoveTo: 'news', AddKeywords: ['kw-platypus'] });
  t.same(listed.configurationFile, { state: 'Equal', reason: null });
  const file = JSON.parse(readFileSync(s.configFile, 'utf8')) as Json;
  file.MailRules.Rules = file.MailRules.Rules.slice(1);
  writeFileSync(s.configFile, JSON.stringify(file));
  t.same((await adminCall(`${admin}/rules`, { apiKey: operator })).json().configurationFile, { state: 'Differs', reason: null }, 'an edited file differs');
  writeFileSync(s.configFile, '{ not json');
  t.match((await adminCall(`${admin}/rules`, { apiKey: operator })).json().configurationFile, { state: 'Unknown', reason: /could not be read/ });

  // A rule run over the stored mail: started, then ended; asking again while under way returns it.
  t.equal((await adminCall(`${admin}/rules/runs`, { method: 'POST', apiKey: ADMIN_KEYS.reader, json: { account: 'ann' } })).status, 403);
  t.same((await adminCall(`${admin}/rules/runs${query({ account: 'ann' })}`, { apiKey: operator })).json(), { run: null }, 'no run yet');
  const started = (await adminCall(`${admin}/rules/runs`, { method: 'POST', apiKey: operator, json: { account: 'ann' } })).json();
  t.equal(started.started, true);
  const again = (await adminCall(`${admin}/rules/runs`, { method: 'POST', apiKey: operator, json: { account: 'ann' } })).json();
  if (again.run.runId === started.run.runId) t.equal(again.started, false, 'asking while it is under way returns it');
  else t.ok(started.run.isOutstanding === true && again.started === true, 'the first had ended: a new run');
  const ended = await eventually('the run to end', async () => {
    const status = (await adminCall(`${admin}/rules/runs${query({ account: 'ann' })}`, { apiKey: ADMIN_KEYS.reader })).json();
    return status.run?.isOutstanding === false && status.run.runId === again.run.runId ? status.run : null;
  });
  t.match(ended, { outcome: 'completed', totalEmailCount: 6, judgedEmailCount: 6, progress: { completedEmailCount: 6, totalEmailCount: 6, secondsLeft: 0 } });
  t.ok(ended.matchedEmailCount >= 4, `matched ${ended.matchedEmailCount}`);
  await eventually('the run changes to apply', async () => journalQuiet(sync.database));
  const runEntries = rows(sync.database, 'SELECT rule_name, note FROM mail_rule_history WHERE run_id = ?', [again.run.runId]);
  t.ok(
    runEntries.some((e) => e.rule_name === 'rule-letters-file' && e.note === 'already-there'),
    'a run asks no move of a message already where the rule files it',
  );
  t.same((await onServer(s.dovecot, 'News')).size, 1, 'nothing moved twice');

  // Privacy: nothing of the mail or of the rules reaches a log line.
  const logText = sync.logs.raw();
  for (const secret of [...sensitiveStrings(Object.values(MAIL)), ...PRIVATE])
    t.notOk(logText.includes(secret), `the log does not carry ${secret.slice(0, 14)}…`);
  t.match(logText, /mail-rules\.run-ended/, 'the stage logs what it does, by ids and counts');
  t.match(logText, /"event":"mail-rules\.concluded"[^\n]*"rule":3/, 'a conclusion names the rule by its position');
});

t.test('rules enabled on a deployment that already holds mail: only mail arriving afterwards is judged on arrival', async (t) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());
  await appendMessages(dovecot, 'ann', 'INBOX', [{ raw: MAIL.boss }]);
  // `ghost` is mapped to a folder the server does not have: its binding resolves to nothing.
  const accounts = [{ id: 'ann', user: 'ann', folders: [{ Alias: 'inbox' }, { Alias: 'ghost', Path: 'Ghost' }] }];
  const rules = [RULES[1]!, { Name: 'rule-ghost-file', When: { SubjectContains: 'follow-up' }, Then: { MoveTo: 'ghost', MarkSeen: true } }];
  const before = await startSyncService(dir, dovecot, accounts, { MailRules: { Enabled: false, Rules: rules }, MailSynchronization: { Interval: '01:00:00' } });
  await before.syncNow('ann');
  await before.service.stop();

  const after = await startSyncService(dir, dovecot, accounts, { MailRules: { Enabled: true, Rules: rules }, MailSynchronization: { Interval: '01:00:00' } });
  t.teardown(() => after.service.stop());
  await appendMessages(dovecot, 'ann', 'INBOX', [{ raw: MAIL.later }]);
  await after.syncNow('ann');
  await eventually('the arrival to be applied', async () => {
    const flags = (await onServer(dovecot, 'INBOX')).get('later');
    return flags?.includes('\\Flagged') && flags.includes('\\Seen') && journalQuiet(after.database);
  });
  const inbox = await onServer(dovecot, 'INBOX');
  t.same(inbox.get('boss'), [], 'mail stored before the rules were enabled is left to a rule run');
  t.same(inbox.get('later'), ['\\Flagged', '\\Seen', 'kw-quokka'], 'mail arriving afterwards is judged');
  t.same(
    rows(after.database, 'SELECT rule_name, note FROM mail_rule_history ORDER BY id'),
    [
      { rule_name: 'rule-boss-flag', note: null },
      { rule_name: 'rule-ghost-file', note: 'no-folder' },
    ],
    "a move to an alias bound to no folder is recorded as such; the rule's other changes are still asked",
  );
});
