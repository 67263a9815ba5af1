/** Thread ids: a reply chain agrees, accounts never share a thread, messages without ids stand alone. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { corpusAvailable, corpusDir } from '../../harness/corpus.ts';
import { generateMailbox } from '../../harness/generator.ts';

function threadOf(raw: Uint8Array, account = 'acct-1'): string {
  const reply = parseMessage(raw, account);
  if (!reply.ok) throw new Error('unreadable');
  return reply.message.threadId;
}

t.test('patch series in mime-torture/threads share a thread per series', { skip: !corpusAvailable() && 'the shared corpus is not present' }, async (t) => {
  const root = join(corpusDir(), 'mime-torture/threads/patchwork-series');
  const threads = (series: string): string[] =>
    readdirSync(join(root, series))
      .sort()
      .map((f) => threadOf(readFileSync(join(root, series, f))));
  for (const series of [
    'base-cover-letter',
    'base-out-of-order',
    'base-extra-patches',
    'dependency-base-patch',
    'mercurial-cover-letter',
    'revision-threaded-to-cover',
  ]) {
    t.equal(new Set(threads(series)).size, 1, `${series}: one thread`);
  }
  const revisions = threads('revision-basic');
  t.equal(new Set(revisions.slice(0, 3)).size, 1, 'v1 is one thread');
  t.equal(new Set(revisions.slice(3)).size, 1, 'v2 is one thread');
  t.not(revisions[0], revisions[3], 'two revisions sent as new threads are two threads');
  t.equal(new Set(threads('base-no-references-no-cover')).size, 3, 'without References or In-Reply-To each patch stands alone');
});

t.test('every reply of a generated mailbox is in the thread of the message it answers', async (t) => {
  const byId = new Map<string, string>();
  let replies = 0;
  for (const m of generateMailbox({ seed: 11, count: 400 })) {
    const thread = threadOf(m.raw);
    byId.set(m.messageId, thread);
    if (m.inReplyTo && byId.has(m.inReplyTo)) {
      replies += 1;
      if (byId.get(m.inReplyTo) !== thread) t.fail(`${m.messageId} left the thread of ${m.inReplyTo}`);
    }
  }
  t.ok(replies > 50, `${replies} replies checked`);
});

t.test('the account is part of the thread id; a message without ids has a stable thread of its own', async (t) => {
  const reply = Buffer.from('Message-ID: <b@x>\r\nIn-Reply-To: <a@x>\r\nReferences: <a@x>\r\n\r\nok');
  const root = Buffer.from('Message-ID: <a@x>\r\n\r\nfirst');
  t.equal(threadOf(reply), threadOf(root));
  t.not(threadOf(root, 'acct-1'), threadOf(root, 'acct-2'));
  const anonymous = Buffer.from('Subject: no ids\r\n\r\nbody');
  t.equal(threadOf(anonymous), threadOf(Buffer.from(anonymous)), 'same bytes, same thread');
  t.not(threadOf(anonymous), threadOf(Buffer.from('Subject: other\r\n\r\nbody')));
  t.match(threadOf(root), /^[A-Za-z0-9_-]{22}$/);
});
