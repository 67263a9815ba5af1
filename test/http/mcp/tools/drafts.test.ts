/**
 * The draft tools' input: which members go together is checked once, by
 * the schema, which then says what the draft is (`drafted`), so the tool
 * reads a new message, a reply or a forward without asserting anything.
 */
import t from 'tap';
import { SaveDraftInput, UpdateDraftInput } from '../../../../http/mcp/tools/drafts.ts';

const body = { plainTextBody: 'Hello' };

function refusal(input: unknown): { message: string; path: PropertyKey[] }[] {
  const parsed = SaveDraftInput.safeParse(input);
  return parsed.success ? [] : parsed.error.issues.map((i) => ({ message: i.message, path: i.path }));
}

t.test('each draft reads as what it is', async (t) => {
  t.match(SaveDraftInput.parse({ account: 'alice', subject: 'Plan', ...body }), {
    drafted: { kind: 'new', account: 'alice', subject: 'Plan' },
    to: [],
    cc: [],
    bcc: [],
  });
  t.match(SaveDraftInput.parse({ answeredEmailId: 'e2s', answering: 'everyone', cc: ['c@example.org'], ...body }), {
    drafted: { kind: 'reply', answeredEmailId: 'e2s', audience: 'everyone' },
  });
  t.match(SaveDraftInput.parse({ answeredEmailId: 'e2s', answering: 'forward', to: ['b@example.org'], ...body }), {
    drafted: { kind: 'forward', answeredEmailId: 'e2s' },
  });
  t.match(UpdateDraftInput.parse({ draftId: 'd7', account: 'alice', subject: 'Plan', ...body }), { draftId: 'd7', drafted: { kind: 'new' } });
});

t.test('members that go together are refused apart, naming what is missing', async (t) => {
  t.same(refusal({ ...body }), [{ message: 'state either account and subject, or answeredEmailId and answering', path: [] }]);
  t.same(refusal({ account: 'alice', answeredEmailId: 'e2s', ...body }), [
    { message: 'state either account and subject, or answeredEmailId and answering', path: [] },
  ]);
  t.same(refusal({ account: 'alice', ...body }), [{ message: 'account and subject go together', path: [] }]);
  t.same(refusal({ answering: 'senderOnly', ...body }), [{ message: 'answeredEmailId and answering go together', path: [] }]);
  t.same(refusal({ answeredEmailId: 'e2s', answering: 'senderOnly', bcc: ['b@example.org'], ...body }), [
    { message: 'a reply draft takes its audience from the original: only cc may be added', path: ['to'] },
  ]);
});
