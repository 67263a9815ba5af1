/** Judging a message against mail rules (actors/mail-rules/judge.ts): each condition, run order, accounts, stop-on-move. */
import t from 'tap';
import { askOf, domainOf, judge, matches, type MessageFacts } from '../../../actors/mail-rules/judge.ts';
import type { RuleSpec } from '../../../actors/mail-rules/protocol.ts';

const rule = (name: string, conditions: RuleSpec['conditions'], actions: RuleSpec['actions'], accounts: string[] | null = null): RuleSpec => ({
  name,
  accounts,
  conditions,
  actions,
});
const message: MessageFacts = { account: 'ann', folder: 'inbox', sender: 'News@Letters.Example.org', subject: 'Your Weekly DIGEST, issue 4' };

t.test('each condition, case-insensitive where text', async (t) => {
  const flag = { markFlagged: true };
  t.ok(matches(rule('a', { senderAddress: 'news@letters.example.ORG' }, flag), message), 'address, any case');
  t.notOk(matches(rule('a', { senderAddress: 'news@example.org' }, flag), message), 'address is exact');
  t.ok(matches(rule('d', { senderDomain: 'LETTERS.example.org' }, flag), message), 'domain, any case');
  t.notOk(matches(rule('d', { senderDomain: 'example.org' }, flag), message), 'a parent domain does not match a subdomain');
  t.ok(matches(rule('s', { subjectContains: 'weekly digest' }, flag), message), 'subject contains, any case');
  t.notOk(matches(rule('s', { subjectContains: 'monthly' }, flag), message));
  t.ok(matches(rule('f', { folder: 'inbox' }, flag), message), 'folder alias');
  t.notOk(matches(rule('f', { folder: 'work' }, flag), message));
  t.notOk(matches(rule('all', { senderDomain: 'letters.example.org', folder: 'work' }, flag), message), 'all written must hold');
  t.ok(matches(rule('all', { senderDomain: 'letters.example.org', subjectContains: 'digest', folder: 'inbox' }, flag), message));
  const anonymous = { ...message, sender: null, subject: null };
  t.notOk(matches(rule('a', { senderAddress: 'x@y.z' }, flag), anonymous), 'no sender: no sender condition holds');
  t.notOk(matches(rule('d', { senderDomain: 'y.z' }, flag), anonymous));
  t.notOk(matches(rule('s', { subjectContains: 'a' }, flag), anonymous), 'no subject contains nothing');
  t.equal(domainOf('a@B.c'), 'b.c');
  t.equal(domainOf('nodomain'), null);
});

t.test('actions: keywords folded, sorted, once', async (t) => {
  t.same(askOf(rule('k', { folder: 'inbox' }, { addKeywords: ['Zeta', 'alpha', 'ZETA'], markSeen: true, markFlagged: false, moveTo: 'filed' })), {
    moveTo: 'filed',
    seen: true,
    keywords: ['alpha', 'zeta'],
  });
});

t.test('run order, accounts, stop-on-move', async (t) => {
  const rules = [
    rule('mark', { subjectContains: 'digest' }, { markSeen: true }),
    rule('other-account', { subjectContains: 'digest' }, { markFlagged: true }, ['bob']),
    rule('file', { senderDomain: 'letters.example.org' }, { moveTo: 'news', addKeywords: ['news'] }),
    rule('after-move', { folder: 'inbox' }, { markFlagged: true }),
  ];
  t.same(
    judge(rules, message).map((c) => [c.position, c.rule]),
    [
      [1, 'mark'],
      [3, 'file'],
    ],
    "the other account's rule is skipped, and nothing after the move is judged",
  );
  t.same(
    judge(rules, { ...message, sender: 'friend@example.com' }).map((c) => c.position),
    [1, 4],
    'without a move, later rules run',
  );
  t.same(
    judge(rules, { ...message, account: 'bob', sender: null }).map((c) => c.position),
    [1, 2, 4],
    "bob's own rule applies to bob",
  );
});
