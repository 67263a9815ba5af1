/**
 * The contact routes through a service started for real (no account, so no
 * mail server; the contacts actor runs in its supervisor). Collected
 * contacts are recorded from outside with the store's own `collect`, as an
 * account's sync thread records them. It proves:
 * - route precedence: `/contacts/collected` and `/contacts/by-address` are
 *   never read as a contact (another method there is 405);
 * - creation (201, always Asserted), one contact, export (`exportedAt`, the
 *   same contact), by-address (case-insensitive, none is an empty list);
 *   a malformed or unknown identifier is the same 404 problem document;
 * - the record's rules as 400 sentences naming the member and the rule,
 *   never the value: two preferred, none preferred with several, a single
 *   address not preferred, the same address twice in another case, each
 *   bound (name, note, addresses, address length), empty name, a display
 *   name in an address, a member the route does not take; a record at every
 *   bound fits the 16 KB limit and a larger body is 413;
 * - amendment: the whole record replaces (what it leaves out is gone),
 *   last writer wins (two concurrent edits: exactly one of them, never a
 *   mix), a collected contact is refused with 409 until promoted,
 *   promotion is idempotent, an edit racing an erasure is the 404;
 * - listing: name order then identifier; a walk of three per page visits
 *   every contact once, in order; origin narrows; a cursor is bound to the
 *   origin and carries no readable name; pageSize 1..200, default 50;
 * - erasure: identity and counts, never the person; what the book derived
 *   (a collected record of the person's address) goes too; again: zeros;
 *   collected erasure answers two counts and keeps the asserted;
 * - 403 (exactly status, detail, permission) on every route to credentials
 *   lacking its permission;
 * - no name, address or note in any log line of the whole run.
 */
import t, { type Test } from 'tap';
import { request } from 'undici';
import { routesAt } from '../../../http/admin/admin-listener.ts';
import { ROUTES } from '../../../http/admin/routes/index.ts';
import { collect } from '../../../runtime/store/contacts/book.ts';
import { startCliService } from '../../cli/harness.ts';
import { query, type AdminAnswer } from '../../helpers/admin-client.ts';
import { openServiceStore } from '../../helpers/outbox.ts';

t.setTimeout(240_000);

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
type Address = { address: string; preferred: boolean };
type Contact = { id: string; name: string; origin: 'Asserted' | 'Collected'; addresses: Address[]; note: string | null; recordedAt: string; amendedAt: string };
type Listing = { contacts: Contact[]; nextCursor?: string };

const NOT_FOUND = 'The book holds no contact by that identifier; name one as the contact listing gives it: c followed by digits, such as c12.';
const CONTACT_KEYS = ['addresses', 'amendedAt', 'id', 'name', 'note', 'origin', 'recordedAt'];

async function call(url: string, apiKey: string, method: Method, json?: unknown, raw?: string): Promise<AdminAnswer> {
  const body = json !== undefined ? JSON.stringify(json) : raw;
  const res = await request(url, {
    method,
    headers: { 'x-api-key': apiKey, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.body.text();
  const type = res.headers['content-type'];
  return { status: res.statusCode, body: text, type: Array.isArray(type) ? type.join(', ') : type, json: () => JSON.parse(text) };
}

function problemOf(t: Test, answer: AdminAnswer, status: number, what: string): Record<string, unknown> {
  t.equal(answer.status, status, what);
  t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
  return answer.json();
}

/** The listing order as the spec states it, computed here: the name case-folded with spaces collapsed, then the identifier's number. */
function inBookOrder(contacts: readonly Contact[]): string[] {
  const key = (c: Contact) => c.name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  return [...contacts].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : Number(a.id.slice(1)) - Number(b.id.slice(1)))).map((c) => c.id);
}

t.test('contact routes', async (t) => {
  // Debug lines too, so the leak check below covers everything the contacts actor writes.
  const svc = await startCliService(t, { sections: { Logging: { Level: 'debug', Format: 'Json' } } });
  const api = `${svc.admin}/api/admin`;
  const as =
    (apiKey: string) =>
    (method: Method, path: string, json?: unknown, raw?: string): Promise<AdminAnswer> =>
      call(`${api}${path}`, apiKey, method, json, raw);
  const operator = as(svc.keys.operator);
  const ok = async <T>(method: Method, path: string, json?: unknown, status = 200): Promise<T> => {
    const answer = await operator(method, path, json);
    if (answer.status !== status) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.body}`);
    return answer.json() as T;
  };
  const listing = (params: Record<string, string | number | undefined> = {}) => ok<Listing>('GET', `/contacts${query(params)}`);
  const db = openServiceStore(t, `${svc.dir}/mailcairn.db`);

  // Everything personal the run writes; none of it may reach a log line or a problem document.
  const secrets: string[] = [];
  const secret = <S extends string>(text: S): S => {
    secrets.push(text, text.toLowerCase());
    return text;
  };
  const leaked = (text: string): string[] => secrets.filter((s) => text.includes(s));

  const yuki = {
    name: secret('Yukiko Quillhaven'),
    addresses: [
      { address: secret('Yukiko.Quill@Example.JP'), preferred: true },
      { address: secret('yq-desk@harbourworks.example'), preferred: false },
    ],
    note: secret('met at the Osaka harbour conference'),
  };

  await t.test('precedence: collected and by-address are never a contact', async (t) => {
    const at = (path: string) => routesAt(ROUTES, path).routes.map((r) => `${r.method} ${r.path}`);
    t.same(at('/api/admin/contacts/collected'), ['DELETE /api/admin/contacts/collected']);
    t.same(at('/api/admin/contacts/by-address'), ['GET /api/admin/contacts/by-address']);
    t.same(at('/api/admin/contacts/c12'), ['GET /api/admin/contacts/{id}', 'PUT /api/admin/contacts/{id}', 'DELETE /api/admin/contacts/{id}']);
    t.same(at('/api/admin/contacts/c12/promotion'), ['POST /api/admin/contacts/{id}/promotion']);
    t.same(at('/api/admin/contacts/c12/export'), ['GET /api/admin/contacts/{id}/export']);
    const getCollected = await operator('GET', '/contacts/collected');
    t.same([getCollected.status, getCollected.body], [405, ''], 'GET /contacts/collected is not a contact named collected');
    const deleteByAddress = await operator('DELETE', '/contacts/by-address');
    t.same([deleteByAddress.status, deleteByAddress.body], [405, '']);
    t.equal((await operator('PUT', '/contacts', yuki)).status, 405, 'PUT on the collection');
    t.equal((await operator('GET', '/contacts/c1/notes')).status, 404, 'nothing under a contact but promotion and export');
  });

  let yukiId = '';
  await t.test('create, one contact, export, by address', async (t) => {
    const created = await operator('POST', '/contacts', yuki);
    t.equal(created.status, 201, 'created');
    const contact = created.json() as Contact;
    yukiId = contact.id;
    t.match(contact.id, /^c[1-9][0-9]*$/);
    t.same(Object.keys(contact).sort(), CONTACT_KEYS);
    t.match(contact, { name: yuki.name, origin: 'Asserted', addresses: yuki.addresses, note: yuki.note });
    t.equal(contact.recordedAt, contact.amendedAt);
    t.ok(Math.abs(Date.parse(contact.recordedAt) - Date.now()) < 60_000, 'recordedAt is an instant');

    t.same(await ok('GET', `/contacts/${contact.id}`), contact, 'read back as created');
    const single = await ok<Contact>(
      'POST',
      '/contacts',
      { name: secret('  Tomas Brightwater '), addresses: [{ address: secret('tomas@brightwater.example') }] },
      201,
    );
    t.equal(single.name, 'Tomas Brightwater', 'the name is trimmed');
    t.same(single.addresses, [{ address: 'tomas@brightwater.example', preferred: true }], 'a single address is the preferred one');
    t.equal(single.note, null, 'no note');

    const before = Date.now();
    const exported = await ok<{ exportedAt: string; contact: Contact }>('GET', `/contacts/${contact.id}/export`);
    t.same(Object.keys(exported).sort(), ['contact', 'exportedAt']);
    t.same(exported.contact, contact, 'everything held about the person');
    t.ok(Date.parse(exported.exportedAt) >= before - 1_000 && Date.parse(exported.exportedAt) <= Date.now() + 1_000, 'exportedAt is the instant taken');

    for (const address of ['yukiko.quill@example.jp', 'YUKIKO.QUILL@EXAMPLE.JP', 'YQ-Desk@HarbourWorks.example']) {
      const found = await ok<{ contacts: Contact[] }>('GET', `/contacts/by-address${query({ address })}`);
      t.same(
        found.contacts.map((c) => c.id),
        [contact.id],
        `by address, compared case-insensitively (${address.length} characters)`,
      );
    }
    t.same(await ok('GET', `/contacts/by-address${query({ address: 'nobody@nowhere.example' })}`), { contacts: [] }, 'nobody: an empty list');
    const badAddress = problemOf(t, await operator('GET', `/contacts/by-address${query({ address: secret('Yukiko <yq@x.example>') })}`), 400, 'display name');
    t.equal(badAddress.detail, 'The query parameter address must be one mailbox address (local@domain), without a display name.');
    t.equal(problemOf(t, await operator('GET', '/contacts/by-address'), 400, 'no address').detail, 'Add the query parameter address.');

    for (const id of ['c999999', 'x', 'c0', 'C1', '1', 'c01', secret('yq@x.example')]) {
      for (const path of [`/contacts/${encodeURIComponent(id)}`, `/contacts/${encodeURIComponent(id)}/export`]) {
        t.same(problemOf(t, await operator('GET', path), 404, `GET ${path}`), { status: 404, title: 'Not found', detail: NOT_FOUND });
      }
    }
  });

  await t.test('the record: rules and bounds, refused naming the rule', async (t) => {
    const a = secret('ren.okafor@lanternhill.example');
    const b = secret('r.okafor@copperfield.example');
    const name = secret('Ren Okafor');
    const cases: Array<[string, unknown, string | RegExp]> = [
      [
        'two preferred',
        {
          name,
          addresses: [
            { address: a, preferred: true },
            { address: b, preferred: true },
          ],
        },
        'The member addresses must mark exactly one address preferred when there are several.',
      ],
      [
        'none preferred among several',
        { name, addresses: [{ address: a }, { address: b }] },
        'The member addresses must mark exactly one address preferred when there are several.',
      ],
      [
        'none preferred, stated false',
        {
          name,
          addresses: [
            { address: a, preferred: false },
            { address: b, preferred: false },
          ],
        },
        'The member addresses must mark exactly one address preferred when there are several.',
      ],
      [
        'a single address not preferred',
        { name, addresses: [{ address: a, preferred: false }] },
        'Change the member addresses: a single address is the preferred one.',
      ],
      [
        'the same address twice, in another case',
        { name, addresses: [{ address: a, preferred: true }, { address: a.toUpperCase() }] },
        'The member addresses must not name the same address twice.',
      ],
      ['no address', { name, addresses: [] }, 'The member addresses must hold at least one address.'],
      ['an empty name', { name: '   ', addresses: [{ address: a }] }, 'The member name must not be empty.'],
      ['no name', { addresses: [{ address: a }] }, 'Add the member name.'],
      ['a name past 200', { name: secret('N'.repeat(201)), addresses: [{ address: a }] }, /^Change the member name: /],
      ['a note past 2,000', { name, addresses: [{ address: a }], note: secret('q'.repeat(2_001)) }, /^Change the member note: /],
      [
        '21 addresses',
        { name, addresses: Array.from({ length: 21 }, (_, i) => ({ address: `ren${i}@lanternhill.example`, preferred: i === 0 })) },
        /^Change the member addresses: /,
      ],
      [
        'an address past 254',
        { name, addresses: [{ address: secret(`${'r'.repeat(250)}@lanternhill.example`) }] },
        /^Change the member addresses\.0\.address: /,
      ],
      [
        'a display name in an address',
        { name, addresses: [{ address: secret(`Ren Okafor <${a}>`) }] },
        'The member addresses.0.address must be one mailbox address (local@domain), without a display name.',
      ],
      ['a member the route does not take', { name, addresses: [{ address: a }], origin: 'Asserted' }, /^Leave out the member origin/],
      ['a label on an address', { name, addresses: [{ address: a, label: 'work' }] }, /^Leave out the member label/],
      ['not an object', [{ name }], 'Send a JSON object as the body.'],
    ];
    const listed = (await listing({ pageSize: 200 })).contacts.length;
    for (const [what, body, detail] of cases) {
      for (const [method, path] of [
        ['POST', '/contacts'],
        ['PUT', `/contacts/${yukiId}`],
      ] as const) {
        const problem = problemOf(t, await operator(method, path, body), 400, `${method} ${what}`);
        t.same(Object.keys(problem).sort(), ['detail', 'status', 'title'], what);
        if (typeof detail === 'string') t.equal(problem.detail, detail, `${method} ${what}`);
        else t.match(problem.detail, detail, `${method} ${what}`);
        t.same(leaked(JSON.stringify(problem)), [], `${method} ${what}: the value is not repeated`);
      }
    }
    t.equal((await listing({ pageSize: 200 })).contacts.length, listed, 'nothing refused was recorded');
    t.same((await ok<Contact>('GET', `/contacts/${yukiId}`)).addresses, yuki.addresses, 'nothing refused was amended');

    const widest = {
      name: secret('語'.repeat(200)),
      addresses: Array.from({ length: 20 }, (_, i) => ({ address: `${String(i).padStart(2, '0')}${'w'.repeat(229)}@lanternhill.example`, preferred: i === 7 })),
      note: secret('綴'.repeat(2_000)),
    };
    t.ok(Buffer.byteLength(JSON.stringify(widest)) > 4 * 1024, 'a record at every bound is past 4 KB');
    const wide = await ok<Contact>('POST', '/contacts', widest, 201);
    t.equal(wide.addresses.length, 20, 'and fits the record limit');
    const tooLarge = await operator('POST', '/contacts', { ...widest, padding: 'p'.repeat(16 * 1024) });
    t.same(problemOf(t, tooLarge, 413, 'past 16 KB'), { status: 413, title: 'Request body too large', detail: 'Send a body of at most 16384 bytes.' });
    t.equal(problemOf(t, await operator('POST', '/contacts', undefined, 'name=Ren'), 400, 'not JSON').detail, 'Send a body that is well-formed JSON.');
    t.equal(
      problemOf(t, await operator('PUT', `/contacts/${yukiId}`, undefined, '{"name":'), 400, 'PUT not JSON').detail,
      'Send a body that is well-formed JSON.',
    );
    t.same((await ok<{ found: boolean }>('DELETE', `/contacts/${wide.id}`)).found, true, 'the widest record erased again');
  });

  await t.test('amendment: whole record, last writer wins, collected refused until promoted, racing an erasure', async (t) => {
    const original = await ok<Contact>('GET', `/contacts/${yukiId}`);
    const amended = { name: secret('Yukiko Quillhaven-Mori'), addresses: [{ address: secret('yukiko@mori-atelier.example') }] };
    await new Promise((r) => setTimeout(r, 5));
    const replaced = await ok<Contact>('PUT', `/contacts/${yukiId}`, amended);
    t.match(replaced, {
      id: yukiId,
      name: amended.name,
      origin: 'Asserted',
      addresses: [{ address: amended.addresses[0]!.address, preferred: true }],
      note: null,
    });
    t.equal(replaced.recordedAt, original.recordedAt, 'recorded when it was');
    t.ok(Date.parse(replaced.amendedAt) > Date.parse(original.amendedAt), 'amended now');
    t.same(await ok('GET', `/contacts/${yukiId}`), replaced, 'the note and the old addresses are gone: the whole record replaces');
    t.same(
      await ok('GET', `/contacts/by-address${query({ address: yuki.addresses[1]!.address })}`),
      { contacts: [] },
      'an address left out no longer finds the contact',
    );

    const first = {
      name: secret('Writer One'),
      addresses: [{ address: secret('one@first.example'), preferred: true }, { address: secret('uno@first.example') }],
      note: secret('sails on Thursdays'),
    };
    const second = { name: secret('Writer Two'), addresses: [{ address: secret('two@second.example') }] };
    const [a, b] = await Promise.all([operator('PUT', `/contacts/${yukiId}`, first), operator('PUT', `/contacts/${yukiId}`, second)]);
    t.same([a.status, b.status], [200, 200], 'both edits succeed');
    const after = await ok<Contact>('GET', `/contacts/${yukiId}`);
    const expected = (record: typeof first | typeof second) => ({
      name: record.name,
      addresses: record.addresses.map((x, i) => ({ address: x.address, preferred: record.addresses.length === 1 || i === 0 })),
      note: 'note' in record ? record.note : null,
    });
    const winner = after.name === first.name ? first : second;
    t.same({ name: after.name, addresses: after.addresses, note: after.note }, expected(winner), 'exactly one whole record, never a mix');
    t.same(after, winner === first ? a.json() : b.json(), 'the last writer is what stands');

    // A collected contact, recorded as a sync thread records one.
    const collectedAddress = secret('harbour.pilot@tidewater.example');
    collect(db, [{ address: collectedAddress, name: secret('Harbour Pilot') }], Date.now());
    const [collected] = (await ok<{ contacts: Contact[] }>('GET', `/contacts/by-address${query({ address: collectedAddress })}`)).contacts;
    t.match(collected, { origin: 'Collected', name: 'Harbour Pilot', addresses: [{ address: collectedAddress, preferred: true }] });
    const refused = problemOf(
      t,
      await operator('PUT', `/contacts/${collected!.id}`, { name: secret('Captain Marlo'), addresses: [{ address: collectedAddress }] }),
      409,
      'PUT collected',
    );
    t.same(refused, {
      status: 409,
      title: 'Conflict',
      detail: `A collected contact cannot be amended in place: promote it first (it then becomes an asserted contact). Promote ${collected!.id} with POST /api/admin/contacts/${collected!.id}/promotion, then send the whole record again.`,
    });
    t.equal((await ok<Contact>('GET', `/contacts/${collected!.id}`)).name, 'Harbour Pilot', 'nothing amended');

    const promoted = await ok<Contact>('POST', `/contacts/${collected!.id}/promotion`);
    t.match(promoted, { id: collected!.id, origin: 'Asserted', name: 'Harbour Pilot', addresses: collected!.addresses });
    const again = await operator('POST', `/contacts/${collected!.id}/promotion`, {});
    t.equal(again.status, 200, 'promoting an asserted contact is answered as it stands');
    t.same(again.json(), promoted, 'and changes nothing');
    t.match(await ok('PUT', `/contacts/${collected!.id}`, { name: secret('Captain Marlo'), addresses: [{ address: collectedAddress }] }), {
      name: 'Captain Marlo',
      origin: 'Asserted',
    });
    t.match(
      problemOf(t, await operator('POST', `/contacts/${collected!.id}/promotion`, { now: true }), 400, 'promotion with a member').detail,
      /^Leave out the member now/,
    );

    for (const id of ['c999999', 'x']) {
      t.same(problemOf(t, await operator('PUT', `/contacts/${id}`, second), 404, `PUT ${id}`).detail, NOT_FOUND);
      t.same(problemOf(t, await operator('POST', `/contacts/${id}/promotion`), 404, `promote ${id}`).detail, NOT_FOUND);
    }

    // An edit arriving after an erasure, and edits racing one: a success before it, the 404 after it, never a contact brought back.
    const gone = await ok<Contact>('POST', '/contacts', { name: secret('Ephemeral Person'), addresses: [{ address: secret('ephemeral@brief.example') }] }, 201);
    t.equal((await ok<{ found: boolean }>('DELETE', `/contacts/${gone.id}`)).found, true);
    t.same(problemOf(t, await operator('PUT', `/contacts/${gone.id}`, second), 404, 'an edit after the erasure').detail, NOT_FOUND);
    for (let round = 0; round < 5; round++) {
      const racing = await ok<Contact>(
        'POST',
        '/contacts',
        { name: secret(`Racing Person ${round}`), addresses: [{ address: secret(`racing${round}@brief.example`) }] },
        201,
      );
      const answers = await Promise.all([
        operator('PUT', `/contacts/${racing.id}`, second),
        operator('DELETE', `/contacts/${racing.id}`),
        operator('PUT', `/contacts/${racing.id}`, first),
      ]);
      t.equal(answers[1]!.status, 200, 'the erasure succeeds');
      for (const edit of [answers[0]!, answers[2]!]) t.ok(edit.status === 200 || edit.status === 404, `an edit racing the erasure: ${edit.status}`);
      t.equal((await operator('GET', `/contacts/${racing.id}`)).status, 404, 'the erased contact stays erased');
    }
  });

  await t.test('listing: order, walks, origin, cursors, page sizes', async (t) => {
    // Names that sort differently by case and spacing than as written, and two of the same name (then by identifier).
    for (const name of ['alba Norquist', 'Alba  Norquist', 'ZELDA Farrow', 'bram Ostrander', 'Carys Wendell', 'Bram Ostrander']) {
      await ok(
        'POST',
        '/contacts',
        {
          name: secret(name),
          addresses: [{ address: secret(`${name.replace(/\s+/g, '.').toLowerCase()}${Math.random().toString(36).slice(2, 6)}@list.example`) }],
        },
        201,
      );
    }
    collect(
      db,
      ['milo@collected.example', 'aster@collected.example', 'quinta@collected.example'].map((address) => ({ address: secret(address), name: null })),
      Date.now(),
    );

    const all = await listing({ pageSize: 200 });
    t.equal(all.nextCursor, undefined, 'nothing follows');
    t.same(
      all.contacts.map((c) => c.id),
      inBookOrder(all.contacts),
      "ordered by the name's comparison form, then identifier",
    );
    for (const contact of all.contacts) t.same(Object.keys(contact).sort(), CONTACT_KEYS);

    for (const pageSize of [1, 3, 4]) {
      const walked: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const answer = await listing({ pageSize, cursor });
        t.ok(answer.contacts.length <= pageSize);
        walked.push(...answer.contacts.map((c) => c.id));
        cursor = answer.nextCursor;
        if (cursor === undefined) break;
        t.equal(answer.contacts.length, pageSize, 'a page with more behind it is full');
        const parts = Buffer.from(cursor, 'base64url').toString('latin1').split('.');
        const readable = [...parts, ...parts.map((p) => Buffer.from(p, 'base64url').toString('utf8'))].join('\n');
        t.same(leaked(readable), [], 'the cursor carries no readable name');
      }
      t.same(
        walked,
        all.contacts.map((c) => c.id),
        `a walk of ${pageSize} per page visits every contact once, in order`,
      );
    }

    const collectedOnly = await listing({ origin: 'Collected' });
    t.ok(collectedOnly.contacts.length >= 3 && collectedOnly.contacts.every((c) => c.origin === 'Collected'), 'narrowed to collected');
    const asserted = await listing({ origin: 'Asserted', pageSize: 2 });
    t.ok(asserted.contacts.every((c) => c.origin === 'Asserted'));
    t.same(
      asserted.contacts.map((c) => c.id),
      all.contacts
        .filter((c) => c.origin === 'Asserted')
        .slice(0, 2)
        .map((c) => c.id),
    );
    const resumed = await listing({ origin: 'Asserted', pageSize: 200, cursor: asserted.nextCursor });
    t.same(
      resumed.contacts.map((c) => c.id),
      all.contacts
        .filter((c) => c.origin === 'Asserted')
        .slice(2)
        .map((c) => c.id),
      'only pageSize may change along a walk',
    );

    const cases: Array<[Record<string, string | number | undefined>, string | RegExp]> = [
      [{ pageSize: 0 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ pageSize: 201 }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ pageSize: 'ten' }, 'Send pageSize as a whole number from 1 to 200.'],
      [{ origin: 'asserted' }, 'Send origin as Asserted or Collected, or leave it out.'],
      [{ origin: 'Owner' }, 'Send origin as Asserted or Collected, or leave it out.'],
      [{ cursor: asserted.nextCursor }, /issued under other filters/],
      [{ origin: 'Collected', cursor: asserted.nextCursor }, /issued under other filters/],
      [{ cursor: 'made-up' }, /not issued by this deployment/],
      [{ prefix: 'al' }, /^Leave out the query parameter prefix/],
    ];
    for (const [params, detail] of cases) {
      const problem = problemOf(t, await operator('GET', `/contacts${query(params)}`), 400, `GET /contacts ${JSON.stringify(params)}`);
      if (typeof detail === 'string') t.equal(problem.detail, detail);
      else t.match(problem.detail, detail);
    }

    collect(
      db,
      Array.from({ length: 60 }, (_, i) => ({ address: secret(`bulk${String(i).padStart(2, '0')}@collected.example`), name: null })),
      Date.now(),
    );
    const page = await listing();
    t.equal(page.contacts.length, 50, 'the default page holds 50');
    t.type(page.nextCursor, 'string');
    const whole = await listing({ pageSize: 200 });
    t.equal(whole.contacts.length, all.contacts.length + 60, '200 at most, and all fit');
  });

  await t.test('erasure: identity and counts, never the person; collected erasure', async (t) => {
    // The deployment collected this person's address before the owner recorded them.
    const work = secret('ines.valdecasa@saltmarsh.example');
    const home = secret('ines@valdecasa-home.example');
    collect(db, [{ address: work, name: secret('Ines V.') }], Date.now());
    const ines = await ok<Contact>(
      'POST',
      '/contacts',
      { name: secret('Ines Valdecasa'), addresses: [{ address: work, preferred: true }, { address: home }], note: secret('prefers mornings') },
      201,
    );
    t.same((await ok<{ contacts: Contact[] }>('GET', `/contacts/by-address${query({ address: work })}`)).contacts.map((c) => c.origin).sort(), [
      'Asserted',
      'Collected',
    ]);

    const erased = await operator('DELETE', `/contacts/${ines.id}`);
    t.equal(erased.status, 200);
    t.same(erased.json(), { id: ines.id, found: true, contacts: 2, addresses: 3 }, 'the person, their addresses, and the collected record of one of them');
    t.same(leaked(erased.body), [], 'never the person');
    t.same(await ok('GET', `/contacts/by-address${query({ address: work })}`), { contacts: [] }, 'nothing left under the address');
    t.equal((await operator('GET', `/contacts/${ines.id}`)).status, 404);
    t.equal((await operator('GET', `/contacts/${ines.id}/export`)).status, 404, 'nothing left to export');
    t.same(await ok('DELETE', `/contacts/${ines.id}`), { id: ines.id, found: false, contacts: 0, addresses: 0 }, 'again: removed nothing, still a success');
    t.same(await ok('DELETE', '/contacts/c999999'), { id: 'c999999', found: false, contacts: 0, addresses: 0 }, 'never held: zeros');
    t.same(problemOf(t, await operator('DELETE', '/contacts/x'), 404, 'DELETE x').detail, NOT_FOUND, 'text that cannot name a contact');
    t.equal((await operator('DELETE', `/contacts/${yukiId}?all=1`)).status, 400, 'no query string on a deletion');

    const before = await listing({ pageSize: 200 });
    const collectedCount = before.contacts.filter((c) => c.origin === 'Collected').length;
    t.ok(collectedCount > 60);
    const swept = await ok('DELETE', '/contacts/collected');
    t.same(swept, { contacts: collectedCount, addresses: collectedCount }, 'two counts: a collected contact holds one address');
    const remaining = await listing({ pageSize: 200 });
    t.same(
      remaining.contacts.map((c) => c.id),
      before.contacts.filter((c) => c.origin === 'Asserted').map((c) => c.id),
      'the asserted contacts stay',
    );
    t.same(await ok('DELETE', '/contacts/collected'), { contacts: 0, addresses: 0 }, 'again: zeros');
  });

  await t.test('403 to a credential lacking the route permission, before anything else', async (t) => {
    const routes: Array<{ method: Method; path: string; permission: string; body?: unknown }> = [
      { method: 'GET', path: '/contacts', permission: 'service.admin.audit.read' },
      { method: 'POST', path: '/contacts', permission: 'service.admin.operate', body: yuki },
      { method: 'GET', path: `/contacts/by-address${query({ address: 'x@y.example' })}`, permission: 'service.admin.audit.read' },
      { method: 'GET', path: `/contacts/${yukiId}`, permission: 'service.admin.audit.read' },
      { method: 'GET', path: '/contacts/not-an-id', permission: 'service.admin.audit.read' },
      { method: 'PUT', path: `/contacts/${yukiId}`, permission: 'service.admin.operate', body: yuki },
      { method: 'POST', path: `/contacts/${yukiId}/promotion`, permission: 'service.admin.operate' },
      { method: 'DELETE', path: `/contacts/${yukiId}`, permission: 'service.admin.erase' },
      { method: 'DELETE', path: '/contacts/collected', permission: 'service.admin.erase' },
      { method: 'GET', path: `/contacts/${yukiId}/export`, permission: 'service.admin.audit.read' },
    ];
    const before = svc.logs.events('auth.refused').length;
    let count = 0;
    for (const route of routes) {
      for (const apiKey of [svc.keys.nothing, svc.keys.reader]) {
        count += 1;
        const answer = await call(`${api}${route.path}`, apiKey, route.method, route.body);
        t.same(problemOf(t, answer, 403, `${route.method} ${route.path}`), {
          status: 403,
          detail: `The credential does not hold the permission ${route.permission}.`,
          permission: route.permission,
        });
      }
    }
    const refused = svc.logs.events('auth.refused').slice(before);
    t.equal(refused.length, count, 'each refusal counted once');
    t.notOk(
      refused.some((l) => String(l.target).includes(yukiId)),
      'logged by route template, never the identifier sent',
    );
    t.equal((await operator('GET', `/contacts/${yukiId}`)).status, 200, 'nothing refused was erased');
  });

  t.same(leaked(svc.logs.raw()), [], 'no name, address or note in any log line');
  t.ok(svc.logs.events('contacts.created').length > 0, "the contacts actor's own lines were captured too");
});
