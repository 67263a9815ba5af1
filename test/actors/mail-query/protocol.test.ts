/**
 * The tool input schemas refuse what docs/mcp-tools.md says they refuse (never
 * clamping), every field is described for agents, and the two opaque strings —
 * the storedEmailId and the cursor — decode strictly.
 */
import t from 'tap';
import { decodeCursor, encodeCursor } from '../../../actors/mail-query/cursor.ts';
import { fingerprint } from '../../../actors/mail-query/filters.ts';
import { GetEmailContentInput, ListAccountsInput, ListEmailsInput, SearchEmailsInput } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { decodeStoredEmailId, encodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

t.test('list_emails input: defaults, ranges refused not clamped, strict', async (t) => {
  t.same(ListEmailsInput.parse({}), { direction: 'newestFirst', pageSize: 25 });
  for (const pageSize of [0, 101, 2.5, -1]) t.notOk(ok(ListEmailsInput, { pageSize }), `pageSize ${pageSize}`);
  t.ok(ok(ListEmailsInput, { pageSize: 1 }) && ok(ListEmailsInput, { pageSize: 100 }));
  t.notOk(ok(ListEmailsInput, { direction: 'sideways' }));
  t.notOk(ok(ListEmailsInput, { limit: 5 }), 'an unknown member');
  t.notOk(ok(ListEmailsInput, { accounts: [] }), 'an empty account list says nothing: leave it out');
  t.ok(ok(ListEmailsInput, { receivedOnOrAfter: '2025-01-01T00:00:00Z', receivedBefore: '2025-01-02T00:00:00+02:00' }));
  t.notOk(ok(ListEmailsInput, { receivedBefore: '2025-01-01' }), 'a date is not an instant');
  t.notOk(ok(ListEmailsInput, { receivedBefore: '2025-01-01T00:00:00' }), 'an instant needs its offset');
  t.ok(ok(ListEmailsInput, { senderAddress: 'ann@example.org' }) && ok(ListEmailsInput, { senderAddress: '@example.org' }));
  t.notOk(ok(ListEmailsInput, { senderAddress: 'ann' }), 'neither an address nor a domain');
  t.notOk(ok(ListEmailsInput, { keyword: 'two words' }));
  t.notOk(ok(ListEmailsInput, { isSeen: 'yes' }));
  t.same(ListAccountsInput.parse({}), {});
  t.notOk(ok(ListAccountsInput, { accounts: ['alice'] }));
  t.notOk(ok(SearchEmailsInput, {}), 'queryText is required');
  t.notOk(ok(SearchEmailsInput, { queryText: '' }));
});

t.test('every input field carries a short description', async (t) => {
  const shapes = { ListEmailsInput: ListEmailsInput.shape, SearchEmailsInput: SearchEmailsInput.shape, GetEmailContentInput: GetEmailContentInput.shape };
  for (const [name, shape] of Object.entries(shapes)) {
    for (const [field, schema] of Object.entries(shape)) {
      const description = (schema as { description?: string }).description;
      t.ok(description && description.length <= 80, `${name}.${field}: ${description}`);
    }
  }
});

t.test('storedEmailId: stable, strict, one spelling per id', async (t) => {
  t.equal(encodeStoredEmailId(1), 'e1');
  t.equal(encodeStoredEmailId(1_234_567), 'eqglj');
  for (const id of [1, 35, 36, 1_234_567, Number.MAX_SAFE_INTEGER]) t.equal(decodeStoredEmailId(encodeStoredEmailId(id)), id);
  for (const bad of ['', 'e', 'e0', 'e01', 'E1', 'e-1', 'e1 ', 'x1', 'e1.5', 'ezzzzzzzzzzzz']) t.equal(decodeStoredEmailId(bad), null, JSON.stringify(bad));
  t.throws(() => encodeStoredEmailId(0));
});

t.test('cursor: round trip; filters bound; anything else invalid', async (t) => {
  const fp = fingerprint({ isSeen: false }, { direction: 'newestFirst' });
  for (const position of [
    { internalDate: 1_700_000_000_000, id: 42 },
    { internalDate: null, id: 7 },
    { internalDate: -5_000, id: 1 },
  ]) {
    t.same(decodeCursor(encodeCursor(position, fp), fp), position);
  }
  const cursor = encodeCursor({ internalDate: 1, id: 2 }, fp);
  t.throws(() => decodeCursor(cursor, fingerprint({ isSeen: true }, { direction: 'newestFirst' })), { code: 'E_CURSOR_FILTERS_CHANGED' });
  t.throws(() => decodeCursor(cursor, fingerprint({ isSeen: false }, { direction: 'oldestFirst' })), { code: 'E_CURSOR_FILTERS_CHANGED' });
  t.equal(
    fingerprint({ accounts: ['b', 'a', 'a'], senderAddress: 'Ann@X.org', receivedBefore: '2025-01-01T02:00:00+02:00' }, { direction: 'newestFirst' }),
    fingerprint({ accounts: ['a', 'b'], senderAddress: 'ann@x.org', receivedBefore: '2025-01-01T00:00:00Z' }, { direction: 'newestFirst' }),
    'equivalent filters share a fingerprint',
  );
  const forge = (text: string) => Buffer.from(text).toString('base64url');
  for (const bad of [`${cursor}A`, cursor.slice(1), forge(`1.1.2.${fp}`), forge(`2.1.2.${fp}.AAAAAAAA`), forge('junk'), 'a+b/', '']) {
    t.throws(() => decodeCursor(bad, fp), { code: 'E_CURSOR_INVALID' }, JSON.stringify(bad));
  }
});
