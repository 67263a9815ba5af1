/**
 * redeemAttachment over the real pools: the query pool reads the stored
 * source from a migrated database file, the parse pool decodes it, and the
 * raw bytes travel from one to the other moved, not copied. A stored list
 * that names another part at the index than the one the parser finds there
 * answers null.
 */
import t, { type Test } from 'tap';
import { redeemAttachment, type RedeemDeps } from '../../../http/attachments/redeem.ts';
import { MAIL_QUERY_TASK } from '../../../actors/mail-query/protocol.ts';
import { MIME_PARSE_TASK, type MimeParseProtocol } from '../../../actors/mime-parse/protocol.ts';
import { createPool } from '../../../runtime/pool/pool.ts';
import type { Askable } from '../../../runtime/ref.ts';
import { run } from '../../../runtime/store/rows.ts';
import { deliver, idOf, world, type World } from '../../actors/mail-query/fixtures.ts';

const agenda = { filename: 'agenda.txt', contentType: 'text/plain', content: 'item one' };

type Asked = { msg: { raw?: Uint8Array }; transfer: readonly unknown[] };

/** The real pools, the parse pool behind a spy that keeps what it was asked. */
function pools(t: Test, w: World): { deps: RedeemDeps; asked: Asked[] } {
  const queryPool = createPool({ id: 'mail-query', entry: MAIL_QUERY_TASK, config: w.slice, minThreads: 1, maxThreads: 1 });
  const parser = createPool({ id: 'mime-parse', entry: MIME_PARSE_TASK, minThreads: 1, maxThreads: 1 });
  t.teardown(() => Promise.all([queryPool.close(), parser.close()]));
  const asked: Asked[] = [];
  const parsePool: Askable<MimeParseProtocol> = {
    id: parser.id,
    ask: (msg, options) => {
      asked.push({ msg: msg as Asked['msg'], transfer: options?.transfer ?? [] });
      return parser.ask(msg, options);
    },
  };
  return { deps: { queryPool, parsePool }, asked };
}

t.test('a stored attachment is read, moved to the parse pool and decoded', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [{ uid: 1, subject: 'Agenda', attachment: agenda }]);
  const id = idOf(w.db, w.bindings.aliceInbox, 1);
  const { deps, asked } = pools(t, w);

  const found = await redeemAttachment(deps, { messageId: id, index: 0 }, ['alice'], 30_000);
  t.match(found, { filename: 'agenda.txt', contentType: 'text/plain' });
  t.equal(found && Buffer.from(found.content).toString(), 'item one');
  t.equal(asked.length, 1);
  t.equal(asked[0]!.msg.raw!.byteLength, 0, 'the raw MIME was moved to the parse pool, not copied');
  t.equal(asked[0]!.transfer.length, 1);

  t.equal(await redeemAttachment(deps, { messageId: id, index: 0 }, ['bob'], 30_000), null, 'another account');
  t.equal(await redeemAttachment(deps, { messageId: id + 1, index: 0 }, ['alice'], 30_000), null, 'no such message');
  t.equal(await redeemAttachment(deps, { messageId: id, index: 1 }, ['alice'], 30_000), null, 'past the stored list');
  t.equal(asked.length, 1, 'the parse pool is not asked when there is no source');
});

t.test('the listed SHA-256 decides: another part at the index is never served', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [{ uid: 1, subject: 'Agenda', attachment: agenda }]);
  const id = idOf(w.db, w.bindings.aliceInbox, 1);
  const { deps, asked } = pools(t, w);

  // As if a later parser listed another part at 0: the stored list no longer names what is found there.
  const { attachments_json } = w.db.prepare('SELECT attachments_json FROM messages WHERE id = ?').get([id]) as { attachments_json: string };
  const list = JSON.parse(attachments_json) as Array<{ sha256: string }>;
  const listed = list[0]!.sha256;
  list[0]!.sha256 = 'ab'.repeat(32);
  run(w.db.prepare('UPDATE messages SET attachments_json = ? WHERE id = ?'), [JSON.stringify(list), id]);
  t.equal(await redeemAttachment(deps, { messageId: id, index: 0 }, ['alice'], 30_000), null, 'the listed SHA-256 does not match');
  t.equal(asked.length, 1, 'decided after the parse pool decoded the part');

  // Not derived yet: nothing is listed, so the parser alone decides.
  run(w.db.prepare('UPDATE messages SET attachments_json = NULL WHERE id = ?'), [id]);
  const found = await redeemAttachment(deps, { messageId: id, index: 0 }, ['alice'], 30_000);
  t.equal(found && Buffer.from(found.content).toString(), 'item one');
  t.equal(await redeemAttachment(deps, { messageId: id, index: 1 }, ['alice'], 30_000), null, 'nothing at that index in what the parser lists');

  // Listed as found: served again.
  list[0]!.sha256 = listed;
  run(w.db.prepare('UPDATE messages SET attachments_json = ? WHERE id = ?'), [JSON.stringify(list), id]);
  t.ok(await redeemAttachment(deps, { messageId: id, index: 0 }, ['alice'], 30_000));
});

t.test('a failed ask rejects rather than answering null', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [{ uid: 1, subject: 'Agenda', attachment: agenda }]);
  const id = idOf(w.db, w.bindings.aliceInbox, 1);
  const { deps } = pools(t, w);
  const down: Askable<MimeParseProtocol> = { id: 'mime-parse', ask: () => Promise.reject(new Error('pool down')) };
  await t.rejects(redeemAttachment({ ...deps, parsePool: down }, { messageId: id, index: 0 }, ['alice'], 30_000), /pool down/);
});
