/**
 * Sends placed in a running service's outbox from outside, for the tests of
 * the administrative outbox routes and commands: the test opens its own
 * connection to the service's database (WAL; the service's writer lock is a
 * file of its own) and records sends with the store's `recordSend`, then
 * moves them through the lifecycle (outgoing.ts) to the stage it needs.
 *
 * Every send placed here is due a day later, so an outbox actor running in
 * the service leaves it alone while the test reads it; a send the test
 * requeues is due at once, and what the actor does with it then is its own.
 */
import type { Database } from '../../runtime/store/open.ts';
import { openStore } from '../../runtime/store/open.ts';
import { claimSend, endAttempt, markBodyBegan, recordSend, type RecipientHeader, type Stage } from '../../runtime/store/outbox/outgoing.ts';
import { one, run } from '../../runtime/store/rows.ts';

export const DAY_MS = 86_400_000;

/** A connection of the test's own to the service's database, closed at teardown. */
export function openServiceStore(t: { teardown(fn: () => unknown): void }, database: string): Database {
  const db = openStore({ database, busyTimeoutMs: 10_000, synchronous: 'Full' });
  t.teardown(() => db.close());
  return db;
}

/** An account row the configuration does not name (a send of it must read as unknown everywhere). */
export function withdrawnAccount(db: Database, id: string): void {
  run(db.prepare('INSERT INTO accounts (id, configured, created_at, updated_at) VALUES (?, 0, 1, 1) ON CONFLICT (id) DO NOTHING'), [id]);
}

export type SeededSend = { id: number; outgoingEmail: string; subject: string; recipients: string[] };

let counter = 0;

/**
 * Record one send of `account` with a subject and recipients of its own,
 * then bring it to `stage`: `Recorded` (never attempted, or `failedOnce`),
 * `claimed` (Recorded with an attempt holding it), `TransmissionBegun`,
 * `Sent` (every recipient accepted), `Refused` (every recipient refused
 * with 550), `Cancelled`.
 */
export function seedSend(
  db: Database,
  account: string,
  stage: Stage | 'claimed',
  options: { failedOnce?: boolean; recipients?: Array<{ address: string; header: RecipientHeader }> } = {},
): SeededSend {
  counter += 1;
  const tag = `${process.pid}-${counter}`;
  const subject = `Outbox seed subject ${tag} about the merger`;
  const recipients = options.recipients ?? [
    { address: `to-${tag}@recipient.example.net`, header: 'to' as const },
    { address: `cc-${tag}@recipient.example.net`, header: 'cc' as const },
    { address: `bcc-${tag}@recipient.example.net`, header: 'bcc' as const },
  ];
  const now = Date.now();
  const raw = Buffer.from(
    `From: ${account}@sender.example.org\r\nTo: ${recipients
      .filter((r) => r.header === 'to')
      .map((r) => r.address)
      .join(', ')}\r\nSubject: ${subject}\r\nMessage-ID: <seed-${tag}@sender.example.org>\r\n\r\nBody of ${tag}\r\n`,
  );
  const result = recordSend(
    db,
    {
      accountId: account,
      requester: 'agent-under-test',
      idempotencyKey: `seed-${tag}`,
      fingerprint: `seed-${tag}`,
      origin: 'new',
      draftId: null,
      messageId: `<seed-${tag}@sender.example.org>`,
      envelopeFrom: `${account}@sender.example.org`,
      raw,
      recipients,
      now,
    },
    { periodMs: DAY_MS, perAccount: null, perCaller: null, perDeployment: null },
  );
  if (result.outcome !== 'recorded') throw new Error(`seedSend: ${result.outcome}`);
  const id = result.outgoing.id;
  // Out of the actor's way: due a day from now.
  run(db.prepare('UPDATE outgoing_emails SET due_at = ? WHERE id = ?'), [now + DAY_MS, id]);
  const attempt = (state: 'accepted' | 'refused' | 'pending', code: number, failure: { code: string; replyCode: number | null } | null): void => {
    if (!claimSend(db, id, now)) throw new Error('seedSend: claim');
    endAttempt(db, id, {
      replies: recipients.map((_, position) => ({ position, state, replyCode: code })),
      failure,
      now,
      maxAttempts: 5,
      retryDelayMs: () => DAY_MS,
    });
  };
  if (options.failedOnce) attempt('pending', 451, { code: 'server-busy', replyCode: 451 });
  switch (stage) {
    case 'Recorded':
      break;
    case 'claimed':
      if (!claimSend(db, id, now)) throw new Error('seedSend: claim');
      break;
    case 'TransmissionBegun':
      if (!claimSend(db, id, now) || !markBodyBegan(db, id, now)) throw new Error('seedSend: begin');
      break;
    case 'Sent':
      attempt('accepted', 250, null);
      break;
    case 'Refused':
      attempt('refused', 550, { code: 'recipient-refused', replyCode: 550 });
      break;
    case 'Cancelled':
      run(db.prepare("UPDATE outgoing_emails SET stage = 'Cancelled', cancelled_by = 'seed', ended_at = ? WHERE id = ?"), [now, id]);
      break;
  }
  const stood = one<{ stage: string }>(db.prepare('SELECT stage FROM outgoing_emails WHERE id = ?'), [id])!.stage;
  if (stood !== (stage === 'claimed' ? 'Recorded' : stage)) throw new Error(`seedSend: ${stood}, not ${stage}`);
  return { id, outgoingEmail: `o${id}`, subject, recipients: recipients.map((r) => r.address) };
}

/** What the store holds of a send, for checks after a decision. */
export function storedSend(db: Database, id: number): { stage: string; cancelled_by: string | null; attempt_count: number; claimed_at: number | null } {
  return one(db.prepare('SELECT stage, cancelled_by, attempt_count, claimed_at FROM outgoing_emails WHERE id = ?'), [id])!;
}
