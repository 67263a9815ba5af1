/**
 * The mail-rules stage's tables (migration 16): the run asked while one is
 * under way is that run; a message's conclusions written twice (a repeat
 * after a crash) are written once and move the run once; the arrival cursor
 * is started once and only moves forward; the judged segment takes live
 * derived mail in id order, with its folder alias.
 */
import t from 'tap';
import { boundPath, judgedSegment, lastStoredId, liveCountsByAlias } from '../../../../runtime/store/mail-rules/judged-mail.ts';
import {
  arrivalCursor,
  concludeMessage,
  endRuleRun,
  forgetArrivalCursors,
  latestRuleRun,
  outstandingRuleRuns,
  requestRuleRun,
  startArrivalCursor,
} from '../../../../runtime/store/mail-rules/rule-records.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { many, run } from '../../../../runtime/store/rows.ts';
import { aliceFolders, freshStore } from '../mailbox/helpers.ts';

function store(db: Database, bindingId: number, uid: number, options: { derived?: boolean; tombstoned?: boolean } = {}): number {
  const tombstoned = options.tombstoned === true;
  const result = run(
    db.prepare(
      `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, stored_at, updated_at, derived_at, from_json, subject, tombstoned_at)
       VALUES ('alice', ?, 1, ?, ?, 1, 1, ?, ?, ?, ?)`,
    ),
    [
      bindingId,
      uid,
      tombstoned ? 'tombstoned' : 'stored',
      options.derived === false ? null : 1,
      tombstoned ? null : JSON.stringify([{ name: '', address: `s${uid}@example.org` }]),
      tombstoned ? null : `Subject ${uid}`,
      tombstoned ? 1 : null,
    ],
  );
  return Number(result.lastInsertRowid);
}

t.test('segments, counts, bound paths', async (t) => {
  const db = freshStore(t);
  const { inbox, archive } = aliceFolders(db);
  const a = store(db, inbox.id, 1);
  const b = store(db, archive.id, 1);
  store(db, inbox.id, 2, { tombstoned: true });
  const d = store(db, inbox.id, 3, { derived: false });
  t.same(
    judgedSegment(db, 'alice', 0, Number.MAX_SAFE_INTEGER, 10).map((m) => [m.id, m.alias]),
    [
      [a, 'inbox'],
      [b, 'archive'],
    ],
    'live, derived, in id order, with the alias',
  );
  t.same(
    judgedSegment(db, 'alice', a, b, 10).map((m) => m.id),
    [b],
    'after and through',
  );
  t.equal(lastStoredId(db, 'alice'), d);
  t.equal(lastStoredId(db, 'bob'), 0);
  t.same([...liveCountsByAlias(db, 'alice', d)].sort(), [
    ['archive', 1],
    ['inbox', 2],
  ]);
  t.equal(boundPath(db, 'alice', 'archive'), 'Archive');
  t.equal(boundPath(db, 'alice', 'nowhere'), null, 'an alias bound to nothing');
});

t.test('a run asked while one is under way is that run; conclusions written once', async (t) => {
  const db = freshStore(t);
  const first = requestRuleRun(db, 'alice', 10, () => ({ throughId: 7, total: 3 }));
  t.equal(first.started, true);
  const again = requestRuleRun(db, 'alice', 11, () => {
    throw new Error('not measured again');
  });
  t.same(again, { started: false, run: first.run }, 'the run under way');
  t.equal(requestRuleRun(db, 'bob', 12, () => ({ throughId: 0, total: 0 })).started, true, 'one per account');
  t.equal(outstandingRuleRuns(db).length, 2);

  const row = { ruleName: 'r', position: 1, messageId: 5, runId: first.run.id, asked: { seen: true }, jobIds: [9], note: null };
  const advance = { kind: 'run', runId: first.run.id, messageId: 5, judged: 2, matched: 1, changes: 1 } as const;
  concludeMessage(db, 'alice', [row], advance, 20);
  concludeMessage(db, 'alice', [row], advance, 21);
  t.equal(many(db.prepare('SELECT id FROM mail_rule_history')).length, 1, 'one history row for the repeat');
  t.match(latestRuleRun(db, 'alice'), { lastMessageId: 5, judged: 2, matched: 1, changes: 1 }, 'the repeat moved nothing');
  endRuleRun(db, first.run.id, 30);
  t.match(latestRuleRun(db, 'alice'), { endedAt: 30, outcome: 'completed' });
  t.equal(requestRuleRun(db, 'alice', 31, () => ({ throughId: 7, total: 3 })).started, true, 'after the end, a new run');
});

t.test('the arrival cursor starts once and only moves forward', async (t) => {
  const db = freshStore(t);
  t.equal(arrivalCursor(db, 'alice'), undefined);
  startArrivalCursor(db, 'alice', 4, 1);
  startArrivalCursor(db, 'alice', 9, 2);
  t.equal(arrivalCursor(db, 'alice'), 4, 'a second start keeps the first position');
  concludeMessage(db, 'alice', [], { kind: 'arrival', accountId: 'alice', messageId: 6 }, 3);
  concludeMessage(db, 'alice', [], { kind: 'arrival', accountId: 'alice', messageId: 5 }, 4);
  t.equal(arrivalCursor(db, 'alice'), 6, 'never backwards');
  forgetArrivalCursors(db);
  t.equal(arrivalCursor(db, 'alice'), undefined, 'forgotten while the stage is off');
  startArrivalCursor(db, 'alice', 9, 5);
  t.equal(arrivalCursor(db, 'alice'), 9, 'and started afresh when it is on again');
});
