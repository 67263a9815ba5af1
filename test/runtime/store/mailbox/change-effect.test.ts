/** What a recorded change does to flags and keywords, and the decisions taken from it while applying. */
import t from 'tap';
import { applyEffect, isSatisfied, sameState, touchedPartChanged, type FlagState } from '../../../../runtime/store/mailbox/change-effect.ts';

const state = (flags: string[], keywords: string[] = []): FlagState => ({ flags, keywords });

t.test('applyEffect: system flags set and cleared, others kept', async (t) => {
  t.same(applyEffect(state(['\\Answered']), { kind: 'set-seen', value: true }), state(['\\Answered', '\\Seen']));
  t.same(applyEffect(state(['\\Flagged', '\\Seen']), { kind: 'set-flagged', value: false }), state(['\\Seen']));
  t.same(applyEffect(state(['\\Seen']), { kind: 'set-seen', value: true }), state(['\\Seen']), 'setting a held flag changes nothing');
});

t.test('applyEffect: keywords compare case-insensitively', async (t) => {
  t.same(
    applyEffect(state([], ['NonJunk']), { kind: 'add-keywords', keywords: ['nonjunk', 'project-x'] }).keywords,
    ['NonJunk', 'project-x'],
    'the server spelling is kept',
  );
  t.same(applyEffect(state([], ['NonJunk', '$Label1']), { kind: 'remove-keywords', keywords: ['nonjunk'] }).keywords, ['$Label1']);
  t.same(applyEffect(state(['\\Seen'], ['a', 'b']), { kind: 'set-keywords', keywords: [] }), state(['\\Seen'], []), 'a replacement keeps system flags');
  t.same(applyEffect(state([], ['b']), { kind: 'relocate', targetPath: 'Archive' }), state([], ['b']), 'a placement leaves flags alone');
});

t.test('isSatisfied and sameState', async (t) => {
  t.ok(isSatisfied(state(['\\Seen']), { kind: 'set-seen', value: true }));
  t.notOk(isSatisfied(state([]), { kind: 'set-seen', value: true }));
  t.ok(isSatisfied(state([], ['Work']), { kind: 'add-keywords', keywords: ['work'] }), 'held under another case');
  t.notOk(isSatisfied(state([], ['work', 'old']), { kind: 'set-keywords', keywords: ['work'] }));
  t.ok(sameState(state(['\\Seen', '\\Flagged'], ['A']), state(['\\Flagged', '\\Seen'], ['a'])));
});

t.test('touchedPartChanged: only a change to the same flag or keywords is a conflict', async (t) => {
  const before = state(['\\Seen'], ['work']);
  t.ok(touchedPartChanged(before, state([], ['work']), { kind: 'set-seen', value: true }), '\\Seen changed on the server');
  t.notOk(touchedPartChanged(before, state(['\\Seen', '\\Answered'], ['work']), { kind: 'set-seen', value: false }), 'another flag changed');
  t.ok(touchedPartChanged(before, state(['\\Seen'], []), { kind: 'remove-keywords', keywords: ['work'] }), 'the keyword was removed meanwhile');
  t.notOk(touchedPartChanged(before, state(['\\Seen'], ['work', 'other']), { kind: 'add-keywords', keywords: ['new'] }), 'another keyword');
  t.ok(touchedPartChanged(before, state(['\\Seen'], ['work', 'other']), { kind: 'set-keywords', keywords: ['x'] }), 'a replacement touches the whole set');
  t.notOk(touchedPartChanged(before, state([], []), { kind: 'delete' }), 'a deletion has no flag part');
});
