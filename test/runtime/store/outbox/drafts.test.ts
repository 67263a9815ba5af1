/**
 * A draft's copies in the drafts folder (runtime/store/outbox/drafts.ts):
 * the outbox asks the journal to append a revision, then marks it filed.
 * Between the two the draft may be restated, deleted or sent. Whatever
 * happened, the copy the journal places is either the draft's filed copy or
 * one owed a removal: never a copy nobody will remove.
 */
import t from 'tap';
import type { Database } from '../../../../runtime/store/open.ts';
import { draftById, endDraft, insertDraft, markDraftFiled, restateDraft, retireFiledCopy } from '../../../../runtime/store/outbox/drafts.ts';
import { freshStore } from '../mailbox/helpers.ts';

let drafts = 0;
function content(now: number) {
  drafts += 1;
  return {
    answering: null,
    messageId: `<d${drafts}@example.org>`,
    raw: Buffer.from(`Subject: a draft\r\n\r\nrevision ${drafts}\r\n`),
    recipients: [{ address: 'dana@example.net', header: 'to' as const }],
    now,
  };
}

const copies = (db: Database, id: number) => {
  const d = draftById(db, id)!;
  return { filed: d.filedJob, retired: d.retiredJobs };
};

t.test('a held revision is filed by its append, once', async (t) => {
  const db = freshStore(t);
  const d = insertDraft(db, 'alice', 'agent', content(1));
  markDraftFiled(db, d.id, 1, 10);
  t.same(copies(db, d.id), { filed: 10, retired: [] });
  markDraftFiled(db, d.id, 1, 10);
  t.same(copies(db, d.id), { filed: 10, retired: [] }, 'marking again (an ask repeated after a crash) changes nothing');
});

t.test('deleted while its append was recorded: the copy is owed a removal', async (t) => {
  const db = freshStore(t);
  const d = insertDraft(db, 'alice', 'agent', content(1));
  t.ok(endDraft(db, d.id, 'deleted', 2));
  markDraftFiled(db, d.id, 1, 11);
  t.same(copies(db, d.id), { filed: null, retired: [11] });
  markDraftFiled(db, d.id, 1, 11);
  t.same(copies(db, d.id), { filed: null, retired: [11] }, 'owed once');
});

t.test('restated while its append was recorded: the old copy is owed a removal, the new revision is filed by its own', async (t) => {
  const db = freshStore(t);
  const d = insertDraft(db, 'alice', 'agent', content(1));
  t.ok(restateDraft(db, d.id, content(2)));
  markDraftFiled(db, d.id, 1, 12);
  t.same(copies(db, d.id), { filed: null, retired: [12] });
  markDraftFiled(db, d.id, 2, 13);
  t.same(copies(db, d.id), { filed: 13, retired: [12] });
});

t.test('sent while its append was recorded: the copy stays filed until its send is Sent, then is retired', async (t) => {
  const db = freshStore(t);
  const d = insertDraft(db, 'alice', 'agent', content(1));
  t.ok(endDraft(db, d.id, 'sent', 2));
  markDraftFiled(db, d.id, 1, 14);
  t.same(copies(db, d.id), { filed: 14, retired: [] });
  retireFiledCopy(db, d.id);
  t.same(copies(db, d.id), { filed: null, retired: [14] });
});
