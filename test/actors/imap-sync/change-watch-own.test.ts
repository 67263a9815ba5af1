/**
 * The watch and the journal's own flag stores, against a real Dovecot: the
 * server tells the reading session of every flag change, the account's own
 * included. A store the journal announced (`expectOwn`) and read back
 * (`ownApplied`) wakes nothing, whether its notice arrives after the read-back
 * or before it (held meanwhile); a change made by another client, or one the
 * journal gave up on, wakes the scheduler as before.
 */
import { ImapFlow } from 'imapflow';
import t from 'tap';
import { ChangeWatch, type FolderState } from '../../../actors/imap-sync/change-watch.ts';
import { createLogger } from '../../../runtime/log.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { passwordOf } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';

t.setTimeout(60_000);

const raw = (n: number): string => `From: a@example.org\r\nTo: b@example.org\r\nSubject: m${n}\r\nMessage-ID: <m${n}@example.org>\r\n\r\nbody ${n}\r\n`;

t.test("the journal's own stores wake nothing; anyone else's do", async (t) => {
  const dovecot = await startDovecot();
  t.teardown(() => dovecot.stop());
  const [u1, u2, u3, u4] = await appendMessages(
    dovecot,
    'alice',
    'INBOX',
    [1, 2, 3, 4].map((n) => ({ raw: raw(n) })),
  );
  const session = async (): Promise<ImapFlow> => {
    const client = new ImapFlow({
      host: dovecot.host,
      port: dovecot.port,
      secure: false,
      auth: { user: 'alice', pass: passwordOf(dovecot, 'alice') },
      logger: false,
      qresync: true,
    });
    await client.connect();
    t.teardown(() => client.logout().catch(() => client.close()));
    return client;
  };
  const [reader, writer, other] = [await session(), await session(), await session()];
  await writer.mailboxOpen('INBOX');
  await other.mailboxOpen('INBOX');

  const wakes: string[][] = [];
  const watch = new ChangeWatch({
    periodMs: 600_000,
    wake: (folders) => void wakes.push(folders),
    schedule: () => ({ cancel() {} }),
    log: createLogger({ level: 'silent', format: 'Json' }),
  });
  const status = await writer.status('INBOX', { messages: true, uidNext: true, uidValidity: true, highestModseq: true });
  if (!status) throw new Error('STATUS refused');
  const baseline: FolderState = {
    uidValidity: BigInt(status.uidValidity!),
    uidNext: status.uidNext!,
    messages: status.messages!,
    highestModseq: status.highestModseq!,
  };
  watch.afterRun([{ alias: 'inbox', path: 'INBOX', selected: baseline }]);
  await watch.start(reader);
  t.ok(watch.watching, 'the watch selected INBOX');
  t.same(wakes, [], 'nothing changed yet');

  /** The journal's way: announce, store, read the MODSEQ back. */
  const ownStore = async (uid: number, flag: string): Promise<bigint> => {
    await writer.messageFlagsAdd(String(uid), [flag], { uid: true });
    const message = await writer.fetchOne(String(uid), { uid: true, flags: true, ...{ modseq: true } }, { uid: true });
    return (message as { modseq: bigint }).modseq;
  };

  watch.expectOwn('INBOX', [u1!]);
  const m1 = await ownStore(u1!, '\\Seen');
  watch.ownApplied('INBOX', [u1!], new Map([[u1!, m1]]));
  await watch.sweep(); // NOOP: the notice of u1 arrives now
  t.same(wakes, [], 'a store the journal made and read back wakes nothing');

  watch.expectOwn('INBOX', [u2!]);
  const m2 = await ownStore(u2!, '\\Flagged');
  await watch.sweep(); // the notice arrives before the journal has said what it made
  t.same(wakes, [], 'its notice is held while the journal has not said');
  watch.ownApplied('INBOX', [u2!], new Map([[u2!, m2]]));
  t.same(wakes, [], 'and dropped once it has');

  await other.messageFlagsAdd(String(u3), ['\\Flagged'], { uid: true });
  await watch.sweep();
  t.ok(wakes.length > 0 && wakes.every((w) => w.join() === 'inbox'), "another client's change wakes the scheduler");

  watch.afterRun([{ alias: 'inbox', path: 'INBOX', selected: null }]);
  await watch.start(reader);
  wakes.length = 0;
  watch.expectOwn('INBOX', [u4!]);
  await writer.messageFlagsAdd(String(u4), ['\\Seen'], { uid: true });
  await watch.sweep();
  watch.ownAbandoned('INBOX', [u4!]);
  t.ok(wakes.length > 0 && wakes.every((w) => w.join() === 'inbox'), 'a store the journal gave up on is judged as anyone else’s');
});
