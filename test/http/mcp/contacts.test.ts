/**
 * The contact tools end to end: the SDK's client against the service's own
 * MCP listener, the real contacts actor and store. Every tool's outcomes
 * (create, read, page, replace whole, erase with counts, promote); the
 * listing narrowed to the published categories and the caller's grant (a
 * withheld tool reads as unknown); the
 * collected-then-promote flow (a contact the store collected, as a sync
 * thread records it), refusals that name the rule and never the value, and
 * no name, address or note in any log line of the run.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t, { type Test } from 'tap';
import { PROMOTE_FIRST } from '../../../actors/contacts/protocol.ts';
import { startService, type Service } from '../../../service/app.ts';
import { collect } from '../../../runtime/store/contacts/book.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';

t.setTimeout(120_000);

const CONTACT_TOOLS = ['list_contacts', 'get_contact', 'create_contact', 'update_contact', 'delete_contact', 'promote_contact'];

type Served = { service: Service; url: string; database: string; logs: ReturnType<typeof captureLog>; keys: { full: string; reader: string; mail: string } };

/** The service with an MCP listener and three API keys: `full` (every tool), `reader` (contacts read only), `mail` (mail read only). */
async function serveContacts(t: Test, mcp: Record<string, unknown> = {}): Promise<Served> {
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const keys = { full: key(), reader: key(), mail: key() };
  const secret = (name: string): string => {
    writeFileSync(join(dir, `${name}.key`), keys[name as keyof typeof keys]);
    return `file:${join(dir, `${name}.key`)}`;
  };
  const logs = captureLog();
  const config = {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'full', SecretReference: secret('full'), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reader', SecretReference: secret('reader'), Lifetime: 'NoLimit' }, Permissions: ['service.mail.contacts.read'] },
        { ApiKey: { Name: 'mail', SecretReference: secret('mail'), Lifetime: 'NoLimit' }, Permissions: ['service.mail.read'] },
      ],
      RateLimiting: { TokenCapacity: 10_000, TokensPerReplenishmentPeriod: 10_000 },
      ...mcp,
    },
  };
  const service = await startService({ configFile: writeConfig(dir, config), env: {}, log: logs.log, hostLogSink: logs.write });
  t.teardown(() => service.stop());
  return { service, url: `http://127.0.0.1:${service.mcp!.port}/mcp`, database, logs, keys };
}

async function clientOf(t: Test, url: string, bearer: string): Promise<Client> {
  const client = new Client({ name: 'contacts-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  t.teardown(() => client.close());
  return client;
}

function key(): string {
  return `mc_${randomUUID().replaceAll('-', '')}`;
}

type Answer = Record<string, unknown>;
type View = {
  id: string;
  name: string;
  origin: string;
  addresses: { address: string; preferred: boolean }[];
  note: string | null;
  recordedAt: string;
  amendedAt: string;
};

/** What the person's record holds that must never reach a log line or a refusal. */
const SATO = {
  name: 'Haruki Satō-Whitfield',
  work: 'h.sato@kanazawa-works.example',
  home: 'haruki.home@mailbox.example',
  note: 'Prefers calls after the Osaka fair',
};
const ADA = { name: 'Ada Quillfeather', address: 'ada.quill@analytical.example' };
const KENJI = { name: 'Kenji Morimoto-Vance', address: 'kenji.mv@shopfront.example' };
const SECRETS = [SATO.name, SATO.work, SATO.home, SATO.note, ADA.name, ADA.address, KENJI.name, KENJI.address, 'Satō', 'Quillfeather', 'Morimoto'];

t.test('the contact tools through /mcp', async (t) => {
  const served = await serveContacts(t);
  const client = await clientOf(t, served.url, served.keys.full);
  const call = async (name: string, args: Answer): Promise<CallToolResult> => (await client.callTool({ name, arguments: args })) as CallToolResult;
  // A call that answers otherwise than expected throws, failing the subtest that made it.
  const ok = async (name: string, args: Answer): Promise<Answer> => {
    const result = await call(name, args);
    if (result.isError) throw new Error(`${name} was refused: ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent as Answer;
  };
  const refused = async (name: string, args: Answer): Promise<{ code: number; message: string; text: string }> => {
    const result = await call(name, args);
    if (!result.isError) throw new Error(`${name} succeeded`);
    const { code, message } = result.structuredContent as { code: number; message: string };
    return { code, message, text: (result.content[0] as { text: string }).text };
  };

  await t.test('tools/list shows the six with the spec annotations', async (t) => {
    const listed = (await client.listTools()).tools.filter((tool) => CONTACT_TOOLS.includes(tool.name));
    t.same(
      listed.map((tool) => tool.name),
      CONTACT_TOOLS,
    );
    const annotations = Object.fromEntries(listed.map((tool) => [tool.name, tool.annotations]));
    const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
    t.match(annotations.list_contacts, readOnly);
    t.match(annotations.get_contact, readOnly);
    t.match(annotations.create_contact, { readOnlyHint: false, destructiveHint: false });
    t.match(annotations.update_contact, { readOnlyHint: false, destructiveHint: true });
    t.match(annotations.delete_contact, { readOnlyHint: false, destructiveHint: true });
    t.match(annotations.promote_contact, { readOnlyHint: false, destructiveHint: false });
  });

  let sato: View;
  let ada: View;
  await t.test('create and get', async (t) => {
    const created = await ok('create_contact', {
      name: `  ${SATO.name} `,
      addresses: [{ address: SATO.work }, { address: SATO.home, preferred: true }],
      note: SATO.note,
    });
    sato = created.contact as View;
    t.match(sato, {
      id: /^c[1-9][0-9]*$/,
      name: SATO.name,
      origin: 'Asserted',
      addresses: [
        { address: SATO.work, preferred: false },
        { address: SATO.home, preferred: true },
      ],
      note: SATO.note,
    });
    t.ok(Number.isFinite(Date.parse(sato.recordedAt)) && sato.recordedAt === sato.amendedAt, 'recorded and amended at the same instant');
    ada = (await ok('create_contact', { name: ADA.name, addresses: [{ address: ADA.address }] })).contact as View;
    t.same(ada.addresses, [{ address: ADA.address, preferred: true }], 'a single address is the preferred one');
    t.same(ada.note, null);
    t.same(await ok('get_contact', { contactId: sato.id }), { contact: sato });
  });

  await t.test('list: prefix of a name or an address, pages in name order with a cursor bound to the filters', async (t) => {
    const names = (answer: Answer) => (answer.contacts as View[]).map((c) => c.name);
    const all = await ok('list_contacts', {});
    t.same(names(all), [ADA.name, SATO.name], 'name order');
    t.equal(all.nextCursor, null, 'the walk ends: nextCursor null');
    t.same(names(await ok('list_contacts', { query: 'haRUKI s' })), [SATO.name], 'a name prefix, case-insensitive');
    t.same(names(await ok('list_contacts', { query: 'H.SATO@kanazawa' })), [SATO.name], 'an address prefix');
    t.same(names(await ok('list_contacts', { query: 'nobody-like-this' })), []);
    t.same(names(await ok('list_contacts', { origin: 'Collected' })), [], 'narrowed to one origin');

    const first = await ok('list_contacts', { pageSize: 1 });
    t.same(names(first), [ADA.name]);
    t.type(first.nextCursor, 'string');
    t.notMatch(String(first.nextCursor), /ada|quill/i, 'the cursor is opaque');
    const second = await ok('list_contacts', { pageSize: 5, cursor: first.nextCursor });
    t.same(names(second), [SATO.name], 'only pageSize may change between pages');
    t.equal(second.nextCursor, null);

    t.match(await refused('list_contacts', { pageSize: 1, origin: 'Asserted', cursor: first.nextCursor }), { code: 52002 });
    t.match(await refused('list_contacts', { pageSize: 1, query: 'a', cursor: first.nextCursor }), { code: 52002 });
    t.match(await refused('list_contacts', { cursor: `${first.nextCursor}x` }), { code: 52001 });
    t.match(await refused('list_contacts', { cursor: 'not-a-cursor' }), { code: 52001 });
    t.match(await refused('list_contacts', { pageSize: 201 }), { code: 51001, message: /pageSize/ });
    t.match(await refused('list_contacts', { pageSize: 0 }), { code: 51001, message: /pageSize/ });
    t.match(await refused('list_contacts', { query: '   ' }), { code: 51001, message: /query/ });
  });

  await t.test('update replaces the whole record', async (t) => {
    const updated = (await ok('update_contact', { contactId: sato.id, name: SATO.name, addresses: [{ address: SATO.work }] })).contact as View;
    t.match(updated, { id: sato.id, origin: 'Asserted', addresses: [{ address: SATO.work, preferred: true }], note: null }, 'an omitted note is cleared');
    t.equal(updated.recordedAt, sato.recordedAt);
    t.ok(Date.parse(updated.amendedAt) >= Date.parse(sato.amendedAt));
    t.same(await ok('get_contact', { contactId: sato.id }), { contact: updated });
    sato = updated;
  });

  await t.test('invalid input names the rule, never the value', async (t) => {
    const cases: Array<[string, Answer, RegExp]> = [
      ['create_contact', { name: SATO.name, addresses: [{ address: SATO.work }, { address: SATO.home }] }, /exactly one address preferred/],
      ['create_contact', { name: SATO.name, addresses: [{ address: SATO.work, preferred: true }, { address: SATO.work.toUpperCase() }] }, /same address twice/],
      ['create_contact', { name: SATO.name, addresses: [{ address: `${SATO.name} <${SATO.work}>` }] }, /one mailbox address/],
      ['create_contact', { name: SATO.name, addresses: [{ address: SATO.work, preferred: false }] }, /single address is the preferred one/],
      ['create_contact', { name: SATO.name, addresses: [] }, /at least one address/],
      ['create_contact', { name: '   ', addresses: [{ address: SATO.work }] }, /name: must not be empty/],
      ['create_contact', { name: SATO.name.repeat(20), addresses: [{ address: SATO.work }] }, /name/],
      ['create_contact', { name: SATO.name, addresses: [{ address: SATO.work }], note: SATO.note.repeat(100) }, /note/],
      ['create_contact', { name: SATO.name, addresses: [{ address: SATO.work }], nickname: SATO.name }, /unknown member\(s\) nickname/],
      ['update_contact', { contactId: sato.id, name: SATO.name, addresses: [{ address: SATO.work }, { address: SATO.home }] }, /exactly one address preferred/],
      ['update_contact', { contactId: SATO.name, name: SATO.name, addresses: [{ address: SATO.work }] }, /contactId: must be a contact identifier/],
      ['get_contact', { contactId: 'e12' }, /contactId: must be a contact identifier/],
      ['delete_contact', { contactId: 'c0' }, /contactId/],
    ];
    for (const [tool, args, rule] of cases) {
      const answer = await refused(tool, args);
      t.equal(answer.code, 51001, `${tool}: 51001`);
      t.match(answer.message, rule, `${tool}: names the rule`);
      for (const secret of SECRETS) t.notOk(answer.text.toLowerCase().includes(secret.toLowerCase()), `${tool}: the refusal does not repeat the value`);
    }
    t.same((await ok('list_contacts', {})).contacts, [ada, sato], 'nothing refused was recorded');
  });

  await t.test('a collected contact is refused amendment until promoted', async (t) => {
    const writer = openStore({ database: served.database, busyTimeoutMs: 5_000, synchronous: 'Full' });
    const recorded = writer.transaction(() => collect(writer, [{ address: KENJI.address, name: KENJI.name }], Date.now()))();
    t.equal(recorded, 1, 'collected as a sync thread records it, in its own transaction');
    writer.close();
    const [kenji] = (await ok('list_contacts', { origin: 'Collected' })).contacts as View[];
    t.match(kenji, { name: KENJI.name, origin: 'Collected', addresses: [{ address: KENJI.address, preferred: true }] });
    const id = kenji!.id;

    const amend = { contactId: id, name: KENJI.name, addresses: [{ address: KENJI.address }], note: 'met once' };
    const collected = await refused('update_contact', amend);
    t.equal(collected.code, 58002, 'its own code');
    t.ok(collected.message.includes(PROMOTE_FIRST), 'the sentence says to promote first');
    t.match(collected.message, new RegExp(`\\b${id}\\b`), 'naming the identifier');
    t.match((await ok('get_contact', { contactId: id })).contact, { origin: 'Collected', note: null }, 'unchanged');

    const promoted = await ok('promote_contact', { contactId: id });
    t.match(promoted, { promoted: true, contact: { id, origin: 'Asserted', name: KENJI.name } });
    t.match(await ok('promote_contact', { contactId: id }), { promoted: false, contact: { id, origin: 'Asserted' } }, 'promoting again changes nothing');
    t.match((await ok('update_contact', amend)).contact, { id, origin: 'Asserted', note: 'met once' }, 'now it can be amended');
    t.same((await ok('list_contacts', { origin: 'Collected' })).contacts, []);
  });

  await t.test('delete answers the identity and counts; what the book does not hold', async (t) => {
    const erased = await ok('delete_contact', { contactId: sato.id });
    t.same(erased, { id: sato.id, removed: { contacts: 1, addresses: 1 } }, 'identity and counts, never the person');
    t.same(await ok('delete_contact', { contactId: sato.id }), { id: sato.id, removed: { contacts: 0, addresses: 0 } }, 'again: removed nothing, a success');

    const absent = await refused('get_contact', { contactId: sato.id });
    t.same(absent, {
      code: 53001,
      message: `The contact book holds no contact ${sato.id}`,
      text: `Mailcairn error 53001: The contact book holds no contact ${sato.id}`,
    });
    t.same(
      await refused('update_contact', { contactId: sato.id, name: SATO.name, addresses: [{ address: SATO.work }] }),
      absent,
      'an edit of an erased contact: the same answer',
    );
    const never = await refused('promote_contact', { contactId: 'c999999' });
    t.same(never, {
      code: 53001,
      message: 'The contact book holds no contact c999999',
      text: 'Mailcairn error 53001: The contact book holds no contact c999999',
    });
    t.same(
      ((await ok('list_contacts', {})).contacts as View[]).map((c) => c.name),
      [ADA.name, KENJI.name],
    );
  });

  await t.test('no name, address or note in any log line', async (t) => {
    const raw = served.logs.raw().toLowerCase();
    t.ok(served.logs.events('mcp.tool-call').length > 30, 'the calls were logged');
    for (const secret of SECRETS) t.notOk(raw.includes(secret.toLowerCase()), `the log never carries ${secret.length} characters of a person`);
    t.notOk(raw.includes('met once'), 'nor a note');
  });
});

t.test('tools/list and calls follow the grant and the published categories', async (t) => {
  const served = await serveContacts(t);
  const contactTools = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).filter((name) => CONTACT_TOOLS.includes(name));

  const full = await clientOf(t, served.url, served.keys.full);
  t.same(await contactTools(full), CONTACT_TOOLS, 'an entry writing no Permissions list: all six');
  const id = (
    (await full.callTool({ name: 'create_contact', arguments: { name: ADA.name, addresses: [{ address: ADA.address }] } })).structuredContent as {
      contact: View;
    }
  ).contact.id;

  const reader = await clientOf(t, served.url, served.keys.reader);
  t.same(await contactTools(reader), ['list_contacts', 'get_contact'], 'contacts read only: the two read tools');
  t.same(
    (await reader.listTools()).tools.map((tool) => tool.name),
    ['list_contacts', 'get_contact'],
    'and nothing of the mail tools',
  );
  t.match((await reader.callTool({ name: 'get_contact', arguments: { contactId: id } })).structuredContent, { contact: { id, origin: 'Asserted' } });
  for (const name of ['create_contact', 'update_contact', 'delete_contact', 'promote_contact']) {
    await t.rejects(
      reader.callTool({ name, arguments: { contactId: id } }),
      { code: -32602, message: `MCP error -32602: Unknown tool: '${name}'` },
      `${name} reads as unknown`,
    );
  }
  const unknown = await reader.callTool({ name: 'no_such_tool', arguments: {} }).catch((err: unknown) => err);
  const withheld = await reader.callTool({ name: 'delete_contact', arguments: { contactId: id } }).catch((err: unknown) => err);
  t.same(
    { code: (withheld as { code: number }).code, message: (withheld as Error).message.replace('delete_contact', 'X') },
    { code: (unknown as { code: number }).code, message: (unknown as Error).message.replace('no_such_tool', 'X') },
    'the same answer as a tool that does not exist',
  );
  t.match(
    (await full.callTool({ name: 'get_contact', arguments: { contactId: id } })).structuredContent,
    { contact: { id } },
    'the refused delete removed nothing',
  );
  t.match(served.logs.events('auth.refused'), [{ surface: 'mcp', target: 'create_contact', permission: 'service.mail.contacts.write', credential: 'reader' }]);

  const mail = await clientOf(t, served.url, served.keys.mail);
  t.same(await contactTools(mail), [], 'mail read only: no contact tool');
  await t.rejects(mail.callTool({ name: 'list_contacts', arguments: {} }), { code: -32602 });

  await t.test('a deployment that does not publish the category', async (t) => {
    const narrowed = await serveContacts(t, { PublishedToolCategories: ['mailbox'] });
    const client = await clientOf(t, narrowed.url, narrowed.keys.full);
    t.same(await contactTools(client), [], 'no contact tool, whatever the grant');
    t.ok(
      (await client.listTools()).tools.some((tool) => tool.name === 'list_emails'),
      'the published category is listed',
    );
    await t.rejects(client.callTool({ name: 'list_contacts', arguments: {} }), { code: -32602, message: /Unknown tool: 'list_contacts'/ });
  });
});
