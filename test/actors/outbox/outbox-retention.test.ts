/**
 * Outbox retention through the real service (docs/sending.md "Retention"):
 * sends delivered to a real SMTP server and drafts kept through the MCP
 * tools; the ended sends and the deleted draft are then aged past
 * `Outbox:Retention` in the database (the one thing a test cannot wait
 * for), and the service restarted, whose outbox prunes at start.
 * - exactly the aged records lose their MIME and addresses; the young send,
 *   the held draft and every other row keep theirs;
 * - the old ids answer as the spec says: `get_outgoing_email` the same
 *   state, attempts and per-recipient states (addresses erased, in the same
 *   shape), the admin detail the same row, the listing the same page, the
 *   same idempotency key the same record (nothing sent twice), requeue
 *   `StageDoesNotAllowIt`, the deleted draft still "already deleted";
 * - the prune logs counts, never an address or a subject;
 * - erasing a contact leaves the outbox's records of sends to that address
 *   (docs/contacts.md "Erasure"): they go by their own retention.
 */
import t, { type Test } from 'tap';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { many, run } from '../../../runtime/store/rows.ts';
import { adminCall } from '../../helpers/admin-client.ts';
import { ADMIN_KEYS, call, settled, sleep, startOutboxed, type Json } from './outbox-setup.ts';

t.setTimeout(180_000);

const SUBJECT = 'Severance terms for Dana';
const DANA = 'dana.private@example.net';
const GONE = 'gone.box@example.net';
const HOUR = 3_600_000;

function storeOf(t: Test, database: string): Database {
  const db = openStore({ database, busyTimeoutMs: 10_000, synchronous: 'Normal' });
  t.teardown(() => db.close());
  return db;
}

const rowOf = (id: string): number => Number(id.slice(1));

// Filing waits on the account's sync actor, which may be in its first run: on a loaded two-core machine that took
// over 20 s once (.ci/run, stop 49), so the wait is generous; it still ends by itself.
async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const value = probe();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('ended sends and a deleted draft past retention are erased at start; their ids answer as before', async (t) => {
  const o = await startOutboxed(t, {
    outbox: { Retention: { EndedSends: '01:00:00', DeletedDrafts: '01:00:00' } },
    smtp: { rcpt: (address) => (address === GONE ? { code: 550 } : 'accept') },
  });
  const sendTo = async (key: string, to: string[]) => {
    const sent = await call(o.agent, 'send_email', { account: 'ann', to, subject: SUBJECT, plainTextBody: 'The terms are attached.', idempotencyKey: key });
    t.ok(sent.ok, sent.text);
    return sent.value.outgoingEmailId as string;
  };
  const old = await sendTo('old', [DANA, GONE]);
  const older = await sendTo('older', [DANA]);
  const young = await sendTo('young', [DANA, GONE]);
  for (const id of [old, older, young]) await settled(o.agent, id, ['sent']);
  const deleted = await call(o.agent, 'save_draft', { account: 'ann', subject: SUBJECT, to: [DANA], plainTextBody: 'second thoughts' });
  const held = await call(o.agent, 'save_draft', { account: 'ann', subject: SUBJECT, to: [DANA], plainTextBody: 'kept for later' });
  t.equal((await call(o.agent, 'delete_draft', { draftId: deleted.value.draftId })).value.result, 'deleted');

  const db = storeOf(t, o.sync.database);
  const ids = [old, older, young].map(rowOf);
  // The sent copies are filed first: a send whose copy is owed is never erased.
  await until('the sent copies filed', () =>
    many<{ n: number }>(db.prepare(`SELECT count(*) AS n FROM outgoing_emails WHERE sent_copy = 'owed' AND id IN (${ids.join(',')})`))[0]!.n === 0
      ? true
      : undefined,
  );
  // And the drafts' filing settled (the held one placed, the deleted one's copy handed for removal), so nothing moves under the comparison.
  await until('the drafts filed', () =>
    many<{ n: number }>(db.prepare("SELECT count(*) AS n FROM drafts WHERE (state = 'held' AND filed_job IS NULL) OR retired_jobs <> '[]'"))[0]!.n === 0
      ? true
      : undefined,
  );
  const viewsBefore = new Map<string, Json>();
  for (const id of [old, older, young]) viewsBefore.set(id, (await call(o.agent, 'get_outgoing_email', { outgoingEmailId: id })).value);
  const admin = (path: string, json?: object) =>
    adminCall(`http://127.0.0.1:${o.adminPort()}/api/admin/outbox${path}`, { apiKey: ADMIN_KEYS.operator, ...(json ? { json } : {}) });
  const detailBefore = (await admin(`/${old}`)).json();
  const pageBefore = (await admin('')).json();
  t.equal(viewsBefore.get(old)!.recipients.length, 2, 'the send to two, one refused, is Sent');

  // Aged past the period: the two old sends and the deleted draft.
  const aged = Date.now() - 2 * HOUR;
  run(db.prepare(`UPDATE outgoing_emails SET ended_at = ? WHERE id IN (${rowOf(old)}, ${rowOf(older)})`), [aged]);
  run(db.prepare('UPDATE drafts SET updated_at = ? WHERE id = ?'), [aged, rowOf(deleted.value.draftId)]);
  const snapshot = (): Map<string, unknown> => {
    const rows = new Map<string, unknown>();
    for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM outgoing_emails'))) rows.set(`o${r.id}`, r);
    for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM outgoing_recipients'))) rows.set(`o${r.outgoing_id}:${r.position}`, r);
    for (const r of many<Record<string, unknown>>(db.prepare('SELECT * FROM drafts'))) rows.set(`d${r.id}`, r);
    return rows;
  };
  const before = snapshot();

  // The first process's logs are kept: under load its own first sweep may come late enough to find the aged rows.
  const firstLogs = o.sync.logs;
  await o.restart();
  await until('the prune at start', () =>
    many<{ n: number }>(db.prepare('SELECT count(*) AS n FROM outgoing_emails WHERE erased_at IS NOT NULL'))[0]!.n === 2 ? true : undefined,
  );
  await until('the draft erased', () =>
    many<{ e: number | null }>(db.prepare('SELECT erased_at AS e FROM drafts WHERE id = ?'), [rowOf(deleted.value.draftId)])[0]!.e ? true : undefined,
  );

  const after = snapshot();
  const erased = new Set([old, older, deleted.value.draftId]);
  for (const [key, row] of before) {
    if ([...erased].some((id) => key === id || key.startsWith(`${id}:`))) continue;
    t.same(after.get(key), row, `${key} untouched`);
  }
  const sizes = many<{ id: number; n: number }>(db.prepare('SELECT id, length(raw_mime) AS n FROM outgoing_emails ORDER BY id'));
  t.same(
    sizes.filter((r) => r.n === 0).map((r) => `o${r.id}`),
    [old, older],
    'exactly the aged sends lost their MIME',
  );
  t.equal(
    many<{ n: number }>(db.prepare(`SELECT count(*) AS n FROM outgoing_recipients WHERE address <> '' AND outgoing_id IN (${rowOf(old)}, ${rowOf(older)})`))[0]!
      .n,
    0,
    'and every address',
  );

  // The old ids answer as the spec says.
  for (const id of [old, older]) {
    const view = (await call(o.agent, 'get_outgoing_email', { outgoingEmailId: id })).value;
    const was = viewsBefore.get(id)!;
    t.same(view, { ...was, recipients: was.recipients.map((r: Json) => ({ ...r, address: '' })) }, `${id}: same state, attempts, recipients' states`);
  }
  t.same((await call(o.agent, 'get_outgoing_email', { outgoingEmailId: young })).value, viewsBefore.get(young), 'the young send answers in full');
  const detail = (await admin(`/${old}`)).json();
  t.same(
    detail,
    { ...detailBefore, recipients: detailBefore.recipients.map((r: Json) => ({ ...r, address: '' })) },
    'the admin detail: same row, addresses erased',
  );
  t.same((await admin('')).json(), pageBefore, 'the listing is the same page');
  const repeat = await call(o.agent, 'send_email', {
    account: 'ann',
    to: [DANA, GONE],
    subject: SUBJECT,
    plainTextBody: 'The terms are attached.',
    idempotencyKey: 'old',
  });
  t.equal(repeat.value.outgoingEmailId, old, 'the same key answers the erased record');
  t.equal(repeat.value.state, 'sent');
  t.equal((await admin('/requeue', { outgoingEmail: old })).json().outcome, 'StageDoesNotAllowIt', 'an erased send has nothing to offer again');
  t.equal((await admin('/requeue', { outgoingEmail: young })).json().outcome, 'Accepted', 'a kept one with a refused address is re-offered');
  await settled(o.agent, young, ['sent']);
  t.equal(o.smtp.deliveriesFor(DANA).length, 3, 'nothing was sent twice: three sends, one delivery each to Dana');
  const again = await call(o.agent, 'delete_draft', { draftId: deleted.value.draftId });
  t.equal(again.ok, false, 'the erased draft still answers as deleted');
  t.match(again.text, /already sent or deleted/);
  const restated = await call(o.agent, 'update_draft', { draftId: held.value.draftId, account: 'ann', subject: 'Still here', to: [DANA], plainTextBody: 'x' });
  t.equal(restated.ok, true, `the held draft lives ${restated.text}`);

  const pruned = [...firstLogs.events('outbox.pruned'), ...o.sync.logs.events('outbox.pruned')];
  t.match(pruned, [{ sends: 2, drafts: 1 }], 'the sweep is logged once, with its counts');
  const logs = firstLogs.raw() + o.sync.logs.raw();
  t.notMatch(logs, DANA, 'no address in the log');
  t.notMatch(logs, SUBJECT, 'no subject in the log');
});

t.test('erasing a contact leaves the outbox records of sends to its address', async (t) => {
  const o = await startOutboxed(t);
  const created = await fetch(`http://127.0.0.1:${o.adminPort()}/api/admin/contacts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEYS.operator}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Dana Private', addresses: [{ address: DANA }] }),
  });
  t.equal(created.status, 201);
  const contact = (await created.json()) as Json;
  const sent = await call(o.agent, 'send_email', { account: 'ann', to: [DANA], subject: SUBJECT, plainTextBody: 'x', idempotencyKey: 'k' });
  const before = await settled(o.agent, sent.value.outgoingEmailId, ['sent']);
  const erased = await fetch(`http://127.0.0.1:${o.adminPort()}/api/admin/contacts/${contact.id}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${ADMIN_KEYS.operator}` },
  });
  const actorLines = o.sync.logs.lines.filter((l) => typeof l.event === 'string' && l.event.startsWith('actor.'));
  if (erased.status !== 200) t.comment(JSON.stringify(actorLines));
  t.equal(erased.status, 200, `erased: ${erased.status} ${await erased.text()}`);
  t.same((await call(o.agent, 'get_outgoing_email', { outgoingEmailId: sent.value.outgoingEmailId })).value, before, 'the send is as it was, address included');
});
