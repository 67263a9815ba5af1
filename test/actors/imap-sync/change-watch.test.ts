/** The change watch's comparison: what is a change, what is adopted, and what a run's SELECT makes the baseline. */
import t from 'tap';
import { compareFolder, type FolderState, sameState, type Tracked, trackAfterRun } from '../../../actors/imap-sync/change-watch.ts';

const base: FolderState = { uidValidity: 7n, uidNext: 11, messages: 10, highestModseq: 100n };
const tracked = (baseline: FolderState | null): Tracked => ({ alias: 'work', path: 'Work', baseline, wokeOn: null, ranSince: false });

t.test('any of UIDVALIDITY, UIDNEXT, MESSAGES or HIGHESTMODSEQ differing is a change; a missing HIGHESTMODSEQ compares nothing', async (t) => {
  t.ok(sameState(base, { ...base }));
  t.notOk(sameState(base, { ...base, uidNext: 12 }), 'new mail');
  t.notOk(sameState(base, { ...base, messages: 9 }), 'an expunge');
  t.notOk(sameState(base, { ...base, highestModseq: 101n }), 'a flag or keyword change');
  t.notOk(sameState(base, { ...base, uidValidity: 8n }), 'renumbered');
  t.ok(sameState({ ...base, highestModseq: null }, { ...base, highestModseq: 101n }), 'without CONDSTORE flags are not seen by STATUS');
});

t.test('a folder no run has selected adopts its first state; later differences are changes', async (t) => {
  const f = tracked(null);
  t.equal(compareFolder(f, base), 'adopted');
  t.equal(compareFolder(f, base), 'same');
  t.equal(compareFolder(f, { ...base, messages: 11, uidNext: 12 }), 'changed');
  t.equal(compareFolder(f, { ...base, messages: 11, uidNext: 12 }), 'changed', 'still a change until a run takes a new baseline');
});

t.test("a change that landed after the run's SELECT and before the first sweep is a change, never adopted", async (t) => {
  const [f] = trackAfterRun([], [{ alias: 'work', path: 'Work', selected: base }]);
  t.equal(compareFolder(f!, { ...base, highestModseq: 105n }), 'changed');
});

t.test('the run the change woke takes the new baseline; a state a run already ran on is adopted, not woken on forever', async (t) => {
  let list = trackAfterRun([], [{ alias: 'work', path: 'Work', selected: base }]);
  const changed = { ...base, highestModseq: 105n };
  t.equal(compareFolder(list[0]!, changed), 'changed');
  list = trackAfterRun(list, [{ alias: 'work', path: 'Work', selected: changed }]);
  t.equal(compareFolder(list[0]!, changed), 'same', 'the run selected it as it is now');

  // A server whose STATUS disagrees with its SELECT (or a folder whose run keeps failing): one woken run, then adopted.
  const status = { ...base, highestModseq: 200n };
  t.equal(compareFolder(list[0]!, status), 'changed');
  list = trackAfterRun(list, [{ alias: 'work', path: 'Work', selected: { ...base, highestModseq: 199n } }]);
  t.equal(compareFolder(list[0]!, status), 'adopted');
  t.equal(compareFolder(list[0]!, status), 'same');
  t.equal(compareFolder(list[0]!, { ...status, messages: 9 }), 'changed', 'and a real change after that wakes again');
});

t.test('a folder the run did not select keeps its previous baseline; a folder whose path changed starts afresh', async (t) => {
  let list = trackAfterRun([], [{ alias: 'work', path: 'Work', selected: base }]);
  list = trackAfterRun(list, [{ alias: 'work', path: 'Work', selected: null }]);
  t.same(list[0]!.baseline, base);
  list = trackAfterRun(list, [{ alias: 'work', path: 'Work 2', selected: null }]);
  t.equal(list[0]!.baseline, null);
});

t.test("a UIDNEXT the run's SELECT left out (Courier) is not compared, then learned from the first STATUS that agrees", async (t) => {
  const courier = { uidValidity: 7n, uidNext: null, messages: 10, highestModseq: null };
  const [f] = trackAfterRun([], [{ alias: 'work', path: 'Work', selected: courier }]);
  t.equal(compareFolder(f!, { ...courier, uidNext: 11 }), 'same', 'STATUS reporting UIDNEXT is no change by itself');
  t.equal(f!.baseline?.uidNext, 11, 'the baseline learned it');
  t.equal(compareFolder(f!, { ...courier, uidNext: 12, messages: 10 }), 'changed', 'a message arrived and another went: the count alone would not tell');
  const [g] = trackAfterRun([], [{ alias: 'work', path: 'Work', selected: courier }]);
  t.equal(compareFolder(g!, { ...courier, uidNext: 12, messages: 11 }), 'changed', 'new mail before any STATUS: the count tells');
});
