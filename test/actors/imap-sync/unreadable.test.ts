/** One line per unreadable message and a count by class; a parser that threw shows at warn with its class, never content. */
import t from 'tap';
import { noteUnreadable, unreadableClass, type UnreadableCounts } from '../../../actors/imap-sync/unreadable.ts';
import { captureLog } from '../../helpers/log-capture.ts';

t.test('lines and counts by class', async (t) => {
  const logs = captureLog();
  const counts: UnreadableCounts = {};
  noteUnreadable(logs.log, counts, { ok: false, unreadable: true, reason: 'no-header' }, { folder: 'inbox', uid: 7 });
  noteUnreadable(logs.log, counts, { ok: false, unreadable: true, reason: 'parser-failed', errorClass: 'TypeError' }, { folder: 'inbox', uid: 8 });
  noteUnreadable(logs.log, counts, { ok: false, unreadable: true, reason: 'parser-failed', errorClass: 'TypeError' }, { folder: 'inbox', uid: 9 });
  noteUnreadable(logs.log, counts, undefined, { folder: 'inbox', uid: 10 });
  t.same(counts, { 'no-header': 1, 'parser-failed:TypeError': 2, 'no-reply': 1 });
  const lines = logs.events('sync.unreadable');
  t.equal(lines.length, 4, 'one line per message');
  t.match(lines[0], { level: 30, folder: 'inbox', uid: 7, reason: 'no-header', errorClass: null }, 'the mail’s own state: info');
  t.match(lines[1], { level: 40, folder: 'inbox', uid: 8, reason: 'parser-failed', errorClass: 'TypeError' }, 'a parser that threw: warn, with its class');
  t.match(lines[3], { level: 40, reason: 'no-reply' });
  t.equal(unreadableClass({ ok: false, unreadable: true, reason: 'empty' }), 'empty');
});
