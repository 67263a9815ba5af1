/**
 * Open SMTP sessions kept per account between sends.
 *
 * Why: opening a session (greeting, EHLO, STARTTLS, AUTH) costs about
 * 110 ms of round trips, a message on an open session a few ms
 * (docs/benchmarks.md, "outbox"): a connection per send held the outbox at
 * ~65 sends/s. So a session that ended its message cleanly goes back to an
 * idle list of its account, and the account's next attempt takes it instead
 * of opening one.
 *
 * What reuse must not change (docs/sending.md): every attempt is still one
 * message with its own SendTimeout, its own body-began write and its own
 * ending. Hence:
 * - only a session whose message got a clean final reply comes back (250 to
 *   the body, or every recipient refused at RCPT: the RSET before the next
 *   use ends that transaction); after any error, timeout or a body without
 *   a final reply, it is closed, never reused;
 * - a session taken from the list is reset (`RSET`) first; a refused or
 *   unanswered RSET, or a session that died while idle, is closed and the
 *   attempt opens a new one: that happens before any MAIL FROM of the send,
 *   so it is no failure of the send;
 * - credentials are read only when a session is opened (a rotated password
 *   or a new XOAUTH2 token applies from the next new session);
 * - an idle session is closed after `idleMs`, a session after
 *   `maxMessages` messages, and all of them when the outbox stops or
 *   crashes (`closeAll`).
 */
import type SMTPConnection from 'nodemailer/lib/smtp-connection';

type Listener = (err: Error & { code?: string }) => void;
const ignore: Listener = () => {};

/** One open SMTP connection; its `error` and `end` go to whoever holds it now (an attempt, the idle list, a RSET). */
export class SmtpSession {
  readonly connection: SMTPConnection;
  /** Messages that ended cleanly on it. */
  messages = 0;
  /** It reported an error or its end: it is of no further use. */
  gone = false;
  private listener: Listener = ignore;

  constructor(connection: SMTPConnection) {
    this.connection = connection;
    // Always listened to: an 'error' with no listener would throw.
    connection.on('error', (err: Error & { code?: string }) => {
      this.gone = true;
      this.listener(err);
    });
    connection.on('end', () => {
      this.gone = true;
      this.listener(Object.assign(new Error('connection closed'), { code: 'ECONNECTION' }));
    });
  }

  listen(listener: Listener): void {
    this.listener = listener;
  }

  close(): void {
    this.listener = ignore;
    this.gone = true;
    this.connection.close();
  }

  quit(): void {
    this.listener = ignore;
    this.gone = true;
    this.connection.quit();
  }
}

export type SessionLimits = {
  /** Idle sessions kept per account (more are quit). */
  maxIdle: number;
  /** An idle session is quit after this long. */
  idleMs: number;
  /** A session is quit after this many messages. */
  maxMessages: number;
};

type Idle = { session: SmtpSession; timer: NodeJS.Timeout };

export class SmtpSessions {
  private readonly idle = new Map<string, Idle[]>();
  private closed = false;
  private readonly limits: SessionLimits;

  constructor(limits: SessionLimits) {
    this.limits = limits;
  }

  /**
   * An idle session of `account`, reset and ready for MAIL FROM, or null
   * (open a new one). Sessions whose RSET fails are closed on the way.
   */
  async take(account: string, timeoutMs: number): Promise<SmtpSession | null> {
    for (;;) {
      const entry = this.idle.get(account)?.pop();
      if (!entry) return null;
      this.forget(account, entry);
      if ((await reset(entry.session, timeoutMs)) && !entry.session.gone) return entry.session;
      entry.session.close();
    }
  }

  /** Give back a session whose message got a clean final reply. */
  release(account: string, session: SmtpSession): void {
    session.messages += 1;
    const list = this.idle.get(account) ?? [];
    if (this.closed || session.gone || session.messages >= this.limits.maxMessages || list.length >= this.limits.maxIdle) {
      if (!session.gone) session.quit();
      return;
    }
    const entry: Idle = {
      session,
      timer: setTimeout(() => {
        this.forget(account, entry);
        session.quit();
      }, this.limits.idleMs),
    };
    entry.timer.unref();
    // Died while idle (the server's idle timeout, a restart): dropped; the next attempt opens a new one.
    session.listen(() => {
      this.forget(account, entry);
      session.close();
    });
    list.push(entry);
    this.idle.set(account, list);
  }

  /** Close every idle session; those given back later are closed too (the outbox stops, or crashed). */
  closeAll(): void {
    this.closed = true;
    for (const list of this.idle.values())
      for (const entry of list) {
        clearTimeout(entry.timer);
        entry.session.close();
      }
    this.idle.clear();
  }

  /** Idle sessions now (all accounts). */
  get idleCount(): number {
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }

  private forget(account: string, entry: Idle): void {
    clearTimeout(entry.timer);
    const list = this.idle.get(account);
    if (!list) return;
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.idle.delete(account);
  }
}

/** RSET on an idle session: true when the server answered 2xx in time. */
function reset(session: SmtpSession, timeoutMs: number): Promise<boolean> {
  if (session.gone) return Promise.resolve(false);
  return new Promise((resolve) => {
    let done = false;
    const end = (ok: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session.listen(ignore);
      resolve(ok);
    };
    const timer = setTimeout(() => end(false), timeoutMs);
    session.listen(() => end(false));
    try {
      session.connection.reset((err) => end(!err));
    } catch {
      end(false);
    }
  });
}
