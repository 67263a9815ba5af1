/**
 * A defect in the change journal crashes the actor like the sync run's do
 * (issue 30, item 4), and the journal loses and duplicates nothing: the
 * server's answer to the journal's SELECT is turned into a tagged BAD by the
 * fault proxy's rewriter — to the client, a command it built wrong. The attempt is counted, the actor crashes (logged once:
 * `actor.handler-threw` with `ImapCommandRejected`), the supervisor restarts
 * it, and the restarted actor attempts the change exactly once more and
 * ends it `applied`: one audit entry, one failed attempt counted, no dead letter, and no
 * `journal.attempt-failed` note calling it the server's fault.
 */
import Libsql from 'libsql';
import t from 'tap';
import { RecordChangesReply } from '../../../actors/imap-sync/protocol.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { startFaultProxy } from '../../harness/fault-proxy.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

const ACTOR = 'imap-sync:bea';

t.test('a BAD to the journal SELECT: crash, restart, applied once', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'bea', password: 'pw-bea' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'bea', 'INBOX', [...generateMailbox({ seed: 12, count: 3, profile: 'small' })]);
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => proxy.close());
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'bea', user: 'bea', port: proxy.port, folders: [{ Alias: 'inbox' }] }]);
  t.teardown(() => sync.service.stop());
  await sync.syncNow('bea');

  const read = <T>(sql: string, params: unknown[] = []): T[] => {
    const db = new Libsql(sync.database, { readonly: true });
    try {
      return db.prepare(sql).all(params) as T[];
    } finally {
      db.close();
    }
  };
  const [target] = read<{ id: number; uid: number }>("SELECT id, uid FROM messages WHERE account_id = 'bea' ORDER BY uid LIMIT 1");
  t.ok(target, 'the mirror holds the message');

  // The journal's first SELECT, answered OK by Dovecot, reaches the client as BAD. (Not the STORE: imapflow
  // answers a failed STORE with `false`, and the journal then reads back what the server holds.)
  let rewritten = 0;
  proxy.rewrite((chunk) => {
    if (rewritten > 0) return { bytes: chunk };
    const text = chunk.toString('latin1');
    // The journal selects read-write (SELECT); the reading session and the watch examine (read-only).
    const m = /(^|\r\n)(\S+) OK \[READ-WRITE\] Select completed[^\r]*\r\n/i.exec(text);
    if (!m) return { bytes: chunk };
    rewritten += 1;
    const line = `${m[2]} BAD Error in IMAP command SELECT: rewritten by the test\r\n`;
    return { bytes: Buffer.from(text.slice(0, m.index + m[1]!.length) + line + text.slice(m.index + m[0].length), 'latin1') };
  });

  const reply = await sync.service.supervisor
    .ref(ACTOR)
    .ask(
      { type: 'imap-sync.record-changes', messageId: target!.id, requester: 'rule:test', requestId: null, changes: [{ kind: 'set-flagged', value: true }] },
      { reply: RecordChangesReply },
    );
  t.equal(reply.outcome, 'recorded');
  const job = reply.outcome === 'recorded' ? Number(reply.changes[0]!.changeId.slice(1)) : 0;

  await until(() => read<{ state: string }>('SELECT state FROM jobs WHERE id = ?', [job])[0]?.state === 'done', 120_000, 'the change to end');
  t.equal(rewritten, 1, 'one SELECT answer was turned into BAD');
  const [row] = read<{ state: string; attempt_count: number; failure_class: string | null }>(
    'SELECT state, attempt_count, failure_class FROM jobs WHERE id = ?',
    [job],
  );
  // The failed attempt was counted before the crash (class `unexpected`); the one after the restart ended it.
  t.match(row, { state: 'done', attempt_count: 1, failure_class: 'unexpected' }, 'done, with the one attempt that met the defect counted');
  const audit = read<{ mutation: string; outcome: string }>('SELECT mutation, outcome FROM mutation_audit');
  t.same(
    audit.map((a) => [a.mutation, a.outcome]),
    [['set-flagged', 'applied']],
    'applied once, audited once',
  );
  const server = await mailAdmin(dovecot).fetchAll('bea', 'INBOX');
  t.ok(server.find((m) => m.uid === target!.uid)?.flags.includes('\\Flagged'), 'the server holds the flag');

  const threw = sync.logs.lines.filter((l) => l.event === 'actor.handler-threw' && l.actor === ACTOR);
  t.equal(threw.length, 1, 'the defect is logged once');
  t.match(JSON.stringify(threw[0]), /ImapCommandRejected/, 'as the command the server could not parse');
  t.notMatch(JSON.stringify(threw[0]), /rewritten by the test/, "the server's text is not logged");
  t.equal(sync.logs.events('actor.restart', ACTOR).length, 1, 'the supervisor restarted the actor once');
  t.same(sync.logs.events('journal.attempt-failed', ACTOR), [], 'no retry note calls it the server’s fault');
  t.same(read('SELECT id FROM jobs WHERE state = ?', ['dead']), [], 'nothing dead-lettered');
});
