/**
 * The idle list of SMTP sessions (actors/outbox/smtp-sessions.ts) with stand-in connections: a
 * session comes back reset; a refused RSET, or a session that ended while idle, is closed and the
 * next one (or none: open a new one) is taken; idle expiry, the message limit, the per-account
 * limit and closeAll close them.
 */
import { EventEmitter } from 'node:events';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import t from 'tap';
import { SmtpSession, SmtpSessions } from '../../../actors/outbox/smtp-sessions.ts';

class Fake extends EventEmitter {
  resets = 0;
  closed = false;
  quitted = false;
  resetAnswer: 'ok' | 'refused' | 'silent' = 'ok';
  reset(cb: (err: Error | null) => void): void {
    this.resets += 1;
    if (this.resetAnswer === 'ok') setImmediate(() => cb(null));
    else if (this.resetAnswer === 'refused') setImmediate(() => cb(new Error('502')));
  }
  close(): void {
    this.closed = true;
  }
  quit(): void {
    this.quitted = true;
  }
}
const session = (): [SmtpSession, Fake] => {
  const fake = new Fake();
  return [new SmtpSession(fake as unknown as SMTPConnection), fake];
};
const limits = { maxIdle: 2, idleMs: 200, maxMessages: 3 };

t.test('a released session is taken back after a RSET; none idle means open a new one', async (t) => {
  const pool = new SmtpSessions(limits);
  t.equal(await pool.take('ann', 1_000), null);
  const [s, fake] = session();
  pool.release('ann', s);
  t.equal(await pool.take('bob', 1_000), null, 'per account');
  t.equal(await pool.take('ann', 1_000), s);
  t.equal(fake.resets, 1);
  t.equal(await pool.take('ann', 1_000), null, 'taken once');
});

t.test('a refused or unanswered RSET, or a session ended while idle, is closed and skipped', async (t) => {
  const pool = new SmtpSessions({ ...limits, maxIdle: 5 });
  const [good, goodFake] = session();
  const [refused, refusedFake] = session();
  const [silent, silentFake] = session();
  const [ended, endedFake] = session();
  pool.release('ann', good);
  pool.release('ann', refused);
  pool.release('ann', silent);
  pool.release('ann', ended);
  refusedFake.resetAnswer = 'refused';
  silentFake.resetAnswer = 'silent';
  endedFake.emit('end');
  t.ok(endedFake.closed, 'ended while idle: closed and dropped');
  t.equal(pool.idleCount, 3);
  t.equal(await pool.take('ann', 100), good, 'the one whose RSET was answered');
  t.ok(refusedFake.closed && silentFake.closed, 'the others closed');
  t.equal(endedFake.resets, 0);
  t.equal(goodFake.closed, false);
  t.equal(pool.idleCount, 0);
});

t.test('idle expiry, message limit, per-account limit and closeAll', async (t) => {
  const pool = new SmtpSessions(limits);
  const [a, aFake] = session();
  pool.release('ann', a);
  await new Promise((r) => setTimeout(r, 300));
  t.ok(aFake.quitted, 'quit after idleMs');
  t.equal(await pool.take('ann', 100), null);

  const [b, bFake] = session();
  b.messages = limits.maxMessages - 1;
  pool.release('ann', b);
  t.ok(bFake.quitted, 'quit at maxMessages');

  const made = [session(), session(), session()];
  for (const [s] of made) pool.release('ann', s);
  t.equal(pool.idleCount, 2, 'at most maxIdle per account');
  t.ok(made[2]![1].quitted);
  pool.closeAll();
  t.ok(made[0]![1].closed && made[1]![1].closed, 'closeAll closes the idle ones');
  const [late, lateFake] = session();
  pool.release('ann', late);
  t.ok(lateFake.quitted, 'given back after closeAll: closed');
  t.equal(pool.idleCount, 0);
});
