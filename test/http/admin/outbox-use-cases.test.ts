/**
 * The outbox use cases with a fake query pool and a fake outbox actor (so
 * these run without the actor): each asks again for its permission (14001
 * with the permission; without a principal, none named); an unconfigured
 * account, a foreign cursor, a cursor under other filters and a body
 * naming no send are invalid requests; text naming no send on the detail
 * is the 404 (E_NOT_FOUND); none of these reaches the pool or an actor. A send the pool
 * does not find is RecordUnknown without asking the actor; one it finds is
 * decided by the outbox actor, told the send's row, the caller's identity
 * as `by`, `requester: null` (cancel) or the refusal restated (requeue),
 * and its outcome is answered as given, for each of the five.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../../config/load.ts';
import { createCursors } from '../../../http/admin/cursor.ts';
import { OUTBOX_PATH, decideOutgoingEmail, listOutbox, outboxSummary, showOutgoingEmail } from '../../../http/admin/use-cases/outbox.ts';
import type { Principal } from '../../../http/auth/principal.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';

const holding = (...permissions: string[]): Principal => ({ kind: 'caller', identity: 'operator-entry', permissions: new Set(permissions) });
const refusal = (permission?: string) => ({ code: 'E_APP_REFUSED', publicCode: 14001, details: permission === undefined ? undefined : { permission } });
const OUTCOMES = ['Accepted', 'RecordUnknown', 'StageDoesNotAllowIt', 'AttemptUnderWay', 'RefusalNotRestated'] as const;

t.test('outbox use cases', async (t) => {
  const dir = tempDir(t);
  const imap = { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'u', Password: 'env:PW' };
  const config = loadConfig({
    file: writeConfig(dir, {
      Storage: { Database: `${dir}/m.db` },
      Accounts: [
        { Id: 'pat', Imap: imap, Folders: [{ Alias: 'inbox' }] },
        { Id: 'quinn', Imap: imap, Folders: [{ Alias: 'inbox' }] },
      ],
    }),
    env: {},
  });
  const asked: Array<{ to: string; msg: Record<string, unknown> }> = [];
  let found: string | null = null;
  let outcome: (typeof OUTCOMES)[number] = 'Accepted';
  let next: number | null = null;
  const entry = {
    outgoingEmail: 'o7',
    recordedAt: '2026-11-23T08:20:00.000Z',
    account: 'pat',
    stage: 'Recorded',
    attemptCount: 0,
    lastFailure: null,
    dueAt: '2026-11-23T08:20:00.000Z',
  };
  const queryPool = {
    id: 'mail-query',
    ask: async (msg: Record<string, unknown>) => {
      asked.push({ to: 'mail-query', msg });
      switch (msg.type) {
        case 'mail-query.outgoing-lookup':
          return { account: found } as never;
        case 'mail-query.outbox':
          return { outgoingEmails: [entry], next } as never;
        case 'mail-query.outbox-summary':
          return { stageCounts: { Recorded: 1, TransmissionBegun: 0, Sent: 0, Refused: 0, Cancelled: 0 } } as never;
        case 'mail-query.outgoing-email':
          return { outgoingEmail: msg.outgoing === 7 ? { ...entry, recipients: [] } : null } as never;
        default:
          throw new Error(`unexpected ${String(msg.type)}`);
      }
    },
  };
  const actor = (id: string) => ({
    id,
    ask: async (msg: Record<string, unknown>) => {
      asked.push({ to: id, msg });
      return { outcome } as never;
    },
  });
  const cursors = createCursors(randomBytes(32));
  const deps = { config, queryPool, actor, cursors } as never;
  const reader = holding('service.admin.read');
  const auditor = holding('service.admin.audit.read');
  const operator = holding('service.admin.operate');

  await t.test('each asks again; refusals reach nothing', async (t) => {
    await t.rejects(outboxSummary(deps, operator, 1_000), refusal('service.admin.read'));
    await t.rejects(outboxSummary(deps, null, 1_000), refusal(undefined));
    await t.rejects(listOutbox(deps, auditor, { pageSize: 50 }, 1_000), refusal('service.admin.read'));
    await t.rejects(showOutgoingEmail(deps, reader, 'o7', 1_000), refusal('service.admin.audit.read'));
    await t.rejects(showOutgoingEmail(deps, null, 'o7', 1_000), refusal(undefined));
    await t.rejects(decideOutgoingEmail(deps, reader, { outgoingEmail: 'o7' }, 'cancel', 1_000), refusal('service.admin.operate'));
    await t.rejects(decideOutgoingEmail(deps, auditor, { outgoingEmail: 'o7' }, 'requeue', 1_000), refusal('service.admin.operate'));
    await t.rejects(decideOutgoingEmail(deps, null, { outgoingEmail: 'o7' }, 'requeue', 1_000), refusal(undefined));
    await t.rejects(listOutbox(deps, reader, { account: 'nobody', pageSize: 50 }, 1_000), {
      code: 'E_HTTP_BAD_REQUEST',
      message: /configures no mail account named 'nobody'/,
    });
    const foreign = createCursors(randomBytes(32)).issue(OUTBOX_PATH, {}, [5]);
    await t.rejects(listOutbox(deps, reader, { pageSize: 50, cursor: foreign }, 1_000), {
      code: 'E_HTTP_BAD_REQUEST',
      message: /not issued by this deployment/,
    });
    const otherFilters = cursors.issue(OUTBOX_PATH, { account: 'pat' }, [5]);
    await t.rejects(listOutbox(deps, reader, { pageSize: 50, cursor: otherFilters }, 1_000), {
      code: 'E_HTTP_BAD_REQUEST',
      message: /issued under other filters/,
    });
    await t.rejects(listOutbox(deps, reader, { account: 'pat', stage: 'Sent', pageSize: 50, cursor: otherFilters }, 1_000), {
      code: 'E_HTTP_BAD_REQUEST',
      message: /issued under other filters/,
    });
    const badPosition = cursors.issue(OUTBOX_PATH, {}, [0]);
    await t.rejects(listOutbox(deps, reader, { pageSize: 50, cursor: badPosition }, 1_000), {
      code: 'E_HTTP_BAD_REQUEST',
      message: /not issued by this deployment/,
    });
    for (const text of ['12', 'o0', 'x', '', 'o12/recipients']) {
      await t.rejects(showOutgoingEmail(deps, auditor, text, 1_000), {
        code: 'E_NOT_FOUND',
        message: /holds no send of a configured account by that identifier/,
      });
    }
    for (const text of ['12', 'o0', 'O12', '']) {
      await t.rejects(decideOutgoingEmail(deps, operator, { outgoingEmail: text }, 'cancel', 1_000), {
        code: 'E_HTTP_BAD_REQUEST',
        message: 'Name the send in outgoingEmail as the outbox listing gives it: o followed by digits, such as o12.',
      });
    }
    t.same(asked, [], 'no refusal reached the pool or an actor');
  });

  await t.test('reads go to the query pool over the configured accounts', async (t) => {
    asked.length = 0;
    t.same(await outboxSummary(deps, reader, 1_000), { stageCounts: { Recorded: 1, TransmissionBegun: 0, Sent: 0, Refused: 0, Cancelled: 0 } });
    t.match(asked.at(-1), { to: 'mail-query', msg: { type: 'mail-query.outbox-summary', accounts: ['pat', 'quinn'] } });
    t.same(await listOutbox(deps, reader, { pageSize: 50 }, 1_000), { outgoingEmails: [entry] }, 'no nextCursor when nothing follows');
    next = 7;
    const page = await listOutbox(deps, reader, { account: 'pat', stage: 'Recorded', pageSize: 1 }, 1_000);
    t.type(page.nextCursor, 'string');
    t.same(asked.at(-1)!.msg, {
      type: 'mail-query.outbox',
      accounts: ['pat', 'quinn'],
      pageSize: 1,
      account: 'pat',
      stage: 'Recorded',
    });
    await listOutbox(deps, reader, { account: 'pat', stage: 'Recorded', pageSize: 20, cursor: page.nextCursor }, 1_000);
    t.match(asked.at(-1)!.msg, { after: 7, pageSize: 20 }, 'the cursor resumes after the last row; pageSize may change');
    await t.rejects(listOutbox(deps, reader, { account: 'pat', pageSize: 1, cursor: page.nextCursor }, 1_000), { message: /other filters/ });
    await t.rejects(listOutbox(deps, reader, { stage: 'Recorded', pageSize: 1, cursor: page.nextCursor }, 1_000), { message: /other filters/ });
    t.match(await showOutgoingEmail(deps, auditor, 'o7', 1_000), { outgoingEmail: 'o7', recipients: [] });
    t.match(asked.at(-1), { to: 'mail-query', msg: { type: 'mail-query.outgoing-email', outgoing: 7, accounts: ['pat', 'quinn'] } });
    await t.rejects(showOutgoingEmail(deps, auditor, 'o8', 1_000), { code: 'E_NOT_FOUND' }, 'a well-formed id the pool does not find');
  });

  await t.test('decisions: unknown without the actor; else the outbox actor decides', async (t) => {
    asked.length = 0;
    found = null;
    t.same(await decideOutgoingEmail(deps, operator, { outgoingEmail: 'o7' }, 'cancel', 1_000), { outgoingEmail: 'o7', outcome: 'RecordUnknown' });
    t.same(await decideOutgoingEmail(deps, operator, { outgoingEmail: 'o7', refusalRestated: true }, 'requeue', 1_000), {
      outgoingEmail: 'o7',
      outcome: 'RecordUnknown',
    });
    t.same(
      asked.map((a) => a.to),
      ['mail-query', 'mail-query'],
      'an unknown send reaches no actor',
    );
    found = 'pat';
    for (const each of OUTCOMES) {
      outcome = each;
      t.same(await decideOutgoingEmail(deps, operator, { outgoingEmail: 'o7' }, 'cancel', 1_000), { outgoingEmail: 'o7', outcome: each }, `cancel ${each}`);
      t.same(asked.at(-1), { to: 'outbox', msg: { type: 'outbox.cancel', outgoing: 7, by: 'operator-entry', requester: null } });
      t.same(await decideOutgoingEmail(deps, operator, { outgoingEmail: 'o7' }, 'requeue', 1_000), { outgoingEmail: 'o7', outcome: each }, `requeue ${each}`);
      t.same(asked.at(-1), { to: 'outbox', msg: { type: 'outbox.requeue', outgoing: 7, by: 'operator-entry', refusalRestated: false } });
    }
    await decideOutgoingEmail(deps, operator, { outgoingEmail: 'o7', refusalRestated: true }, 'requeue', 1_000);
    t.same(asked.at(-1)!.msg, { type: 'outbox.requeue', outgoing: 7, by: 'operator-entry', refusalRestated: true }, 'the refusal restated');
    t.match(asked.at(-2), { to: 'mail-query', msg: { type: 'mail-query.outgoing-lookup', outgoing: 7, accounts: ['pat', 'quinn'] } });
  });
});
