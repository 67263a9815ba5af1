/**
 * Steady change on the mail server behind the daemon's back, for the soak
 * benchmark: new mail delivered to INBOX with `doveadm save` (as an MTA's
 * local delivery does) and flag changes (`\Seen`, `\Flagged` added or
 * removed) with `doveadm flags`, each at a fixed rate per minute, on a
 * seeded schedule so two runs change the same messages in the same order.
 * Each change is one doveadm process: a failed one is counted, not retried
 * (the comparison at the end reads the server as it is).
 */
import type { Dovecot } from '../../test/harness/dovecot.ts';
import { mailAdmin } from '../../test/harness/doveadm.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { saveMessage } from '../../test/harness/place-mail.ts';

export type ChurnCounts = { delivered: number; flagChanges: number; failed: number };

export type Churn = {
  /** Changes made so far (a snapshot). */
  counts(): ChurnCounts;
  /** Stops scheduling and waits for the change under way. */
  stop(): Promise<void>;
};

export type ChurnOptions = {
  dovecot: Dovecot;
  user: string;
  /** UIDs already in INBOX (1..existing after a fresh placement): flag changes pick among these and the delivered ones. */
  existing: number;
  mailPerMinute: number;
  flagChangesPerMinute: number;
  seed: number;
};

/** mulberry32: a small seeded generator, enough for picking messages. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const FLAGS = ['\\Seen', '\\Flagged'] as const;

export function startChurn(o: ChurnOptions): Churn {
  const random = seeded(o.seed);
  const admin = mailAdmin(o.dovecot);
  // A generator of its own seed: the new mail is not a copy of the placed mailbox.
  const mail = generateMailbox({ seed: o.seed + 1, count: 1_000_000, profile: 'small' })[Symbol.iterator]();
  const counts: ChurnCounts = { delivered: 0, flagChanges: 0, failed: 0 };
  let highestUid = o.existing;
  let running = true;
  const underWay = new Set<Promise<void>>();

  const track = (p: Promise<void>): void => {
    const done = p.catch(() => void counts.failed++).finally(() => underWay.delete(done));
    underWay.add(done);
  };
  const deliver = async (): Promise<void> => {
    await saveMessage(o.dovecot, o.user, 'INBOX', mail.next().value!.raw);
    counts.delivered++;
    // doveadm save assigns the next UID; nothing else appends to INBOX.
    highestUid++;
  };
  const changeFlag = async (): Promise<void> => {
    if (highestUid === 0) return;
    const uid = 1 + Math.floor(random() * highestUid);
    const flag = FLAGS[Math.floor(random() * FLAGS.length)]!;
    if (random() < 0.5) await admin.addFlags(o.user, 'INBOX', uid, [flag]);
    else await admin.removeFlags(o.user, 'INBOX', uid, [flag]);
    counts.flagChanges++;
  };
  const every = (perMinute: number, change: () => Promise<void>): NodeJS.Timeout | null =>
    perMinute > 0 ? setInterval(() => running && track(change()), 60_000 / perMinute) : null;
  const timers = [every(o.mailPerMinute, deliver), every(o.flagChangesPerMinute, changeFlag)];

  return {
    counts: () => ({ ...counts }),
    async stop() {
      running = false;
      for (const t of timers) if (t) clearInterval(t);
      await Promise.allSettled([...underWay]);
    },
  };
}
