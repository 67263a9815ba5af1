/**
 * Between runs, the account's session watches every mapped folder for
 * changes made on the server (new mail, flag and keyword changes, expunges)
 * and wakes the scheduler, so they reach the mirror within seconds instead
 * of at the next `Interval`.
 *
 * - The first mapped folder that resolved stays selected (read-only) and
 *   imapflow IDLEs on it: any `exists` (either way), `expunge` or `flags`
 *   event, or a new HIGHESTMODSEQ, is a change.
 * - Every `ChangeCheckInterval` a sweep sends NOOP (the selected folder's
 *   pending EXISTS/EXPUNGE/FETCH are delivered) and `STATUS (MESSAGES
 *   UIDNEXT UIDVALIDITY HIGHESTMODSEQ)` for each other folder.
 * - A folder's state is compared with its *baseline*: the state the last run
 *   found when it selected the folder (what the mirror reflects), so a
 *   change landing between that SELECT and the first sweep is a difference,
 *   never missed. Without CONDSTORE there is no HIGHESTMODSEQ: STATUS then
 *   sees only new mail and expunges in the other folders; their flag
 *   changes wait for the interval (the selected folder still reports them).
 *
 * The actor owns the session and the timer: a sweep is one of its private
 * messages, so it never overlaps a run or other work. The actor calls
 * `afterRun` when a run ends, `start` when the session is free, and `stop`
 * before using the session for anything else; `start` again re-selects the
 * watched folder and compares it with its baseline.
 *
 * - The account's own writing session (the change journal) changes flags
 *   in the watched folder too, and the server tells this session of each
 *   change as of anyone's. Those notices are not news: the journal read the
 *   state it made back and the mirror holds it. The journal says which
 *   messages it is about to change (`expectOwn`) and, after the STORE, the
 *   MODSEQ each came to (`ownApplied`); a notice of exactly that state is
 *   taken as the mirror's own (the baseline moves to its MODSEQ), a notice
 *   that arrives before the journal has said is held until it does, and
 *   any other notice wakes the scheduler as before. So a batch of the
 *   rules' changes no longer brings a run that finds nothing new. A notice
 *   still held when the watch stops is left to the run that stopped it, or
 *   to the next `start`'s comparison (the baseline never took it).
 *
 * Logs name folders by alias only, and nothing per sweep above debug.
 */
import type { ImapFlow, MailboxObject, StatusObject } from 'imapflow';
import type { Logger } from '../../runtime/log.ts';

/**
 * What the server says of a folder: as SELECT or STATUS report it. `uidNext` is null when SELECT
 * left out UIDNEXT (Courier does, though RFC 3501 requires it; STATUS reports it).
 */
export type FolderState = { uidValidity: bigint; uidNext: number | null; messages: number; highestModseq: bigint | null };

/** A mapped folder as the last run resolved it; `selected` is what that run's SELECT reported, null when it did not get there. */
export type RunFolder = { alias: string; path: string; selected: FolderState | null };

/**
 * One folder's comparison state. `wokeOn` is the state that last woke the
 * scheduler; `ranSince` says a run ended after that wake.
 */
export type Tracked = { alias: string; path: string; baseline: FolderState | null; wokeOn: FolderState | null; ranSince: boolean };

export function sameState(a: FolderState, b: FolderState): boolean {
  return (
    a.uidValidity === b.uidValidity &&
    // A UIDNEXT that SELECT did not report is not compared (new mail still changes the count).
    (a.uidNext === null || b.uidNext === null || a.uidNext === b.uidNext) &&
    a.messages === b.messages &&
    // Without CONDSTORE on either side there is nothing to compare.
    (a.highestModseq === null || b.highestModseq === null || a.highestModseq === b.highestModseq)
  );
}

/**
 * What a newly observed state means for a tracked folder (mutated in place):
 * - `same`: equal to the baseline;
 * - `adopted`: taken as the baseline without a wake — the first look at a
 *   folder no run has selected yet, or a state a run already ran on since
 *   it woke the scheduler (a server whose STATUS and SELECT disagree, or a
 *   folder that keeps failing, must not wake it on every sweep);
 * - `changed`: wake the scheduler.
 */
export function compareFolder(tracked: Tracked, now: FolderState): 'same' | 'adopted' | 'changed' {
  if (tracked.baseline === null) {
    tracked.baseline = now;
    return 'adopted';
  }
  if (sameState(tracked.baseline, now)) {
    // What SELECT did not report, the first STATUS that agrees with it fills in.
    if (tracked.baseline.uidNext === null && now.uidNext !== null) tracked.baseline = { ...tracked.baseline, uidNext: now.uidNext };
    tracked.wokeOn = null;
    return 'same';
  }
  if (tracked.wokeOn !== null && tracked.ranSince && sameState(tracked.wokeOn, now)) {
    tracked.baseline = now;
    tracked.wokeOn = null;
    return 'adopted';
  }
  if (tracked.wokeOn === null || !sameState(tracked.wokeOn, now)) {
    tracked.wokeOn = now;
    tracked.ranSince = false;
  }
  return 'changed';
}

/** The next tracked list after a run: its SELECT states become the baselines; a folder it did not select keeps the one it had. */
export function trackAfterRun(previous: readonly Tracked[], folders: readonly RunFolder[]): Tracked[] {
  return folders.map((f) => {
    const prev = previous.find((p) => p.alias === f.alias && p.path === f.path);
    return {
      alias: f.alias,
      path: f.path,
      baseline: f.selected ?? prev?.baseline ?? null,
      wokeOn: prev?.wokeOn ?? null,
      ranSince: prev?.wokeOn != null,
    };
  });
}

export function selectedState(mailbox: Pick<MailboxObject, 'uidValidity' | 'uidNext' | 'exists' | 'highestModseq'>): FolderState {
  return {
    uidValidity: BigInt(mailbox.uidValidity),
    uidNext: typeof mailbox.uidNext === 'number' ? mailbox.uidNext : null,
    messages: mailbox.exists,
    highestModseq: mailbox.highestModseq ?? null,
  };
}

function statusState(status: StatusObject | false): FolderState | null {
  if (!status || status.uidValidity === undefined || status.uidNext === undefined || status.messages === undefined) return null;
  return { uidValidity: BigInt(status.uidValidity), uidNext: status.uidNext, messages: status.messages, highestModseq: status.highestModseq ?? null };
}

export type ChangeWatchDeps = {
  /** How often the sweep runs (`MailSynchronization:ChangeCheckInterval`). */
  periodMs: number;
  /** Tell the scheduler; `folders` are the aliases seen changed (for the debug line). */
  wake(folders: string[]): void;
  /** Arrange for the actor to call `sweep` after `delayMs` (a private message). */
  schedule(delayMs: number): { cancel(): void };
  log: Logger;
};

type Listeners = { client: ImapFlow; off(): void };

/** A flag notice of the watched folder: the message and the MODSEQ it came to. */
type Notice = { uid: number; modseq: bigint };

export class ChangeWatch {
  private readonly deps: ChangeWatchDeps;
  private tracked: Tracked[] = [];
  private client: ImapFlow | null = null;
  private listeners: Listeners | null = null;
  private timer: { cancel(): void } | null = null;
  /** Aliases seen changed since the last run; the sweep wakes again while any remain (a wake the scheduler ignored is not lost). */
  private readonly changed = new Set<string>();
  private opening = false;
  watching = false;
  /** The journal's changes under way (messages about to be stored) and made (the MODSEQ each came to), by folder path. */
  private readonly ownPending = new Map<string, Set<number>>();
  private readonly ownMade = new Map<string, Map<number, bigint>>();
  /** Notices of messages the journal is changing, held until it says what it made. */
  private held: Notice[] = [];

  constructor(deps: ChangeWatchDeps) {
    this.deps = deps;
  }

  /** A run ended: the folders as it resolved and selected them. */
  afterRun(folders: readonly RunFolder[]): void {
    this.tracked = trackAfterRun(this.tracked, folders);
    this.changed.clear();
    // The run read everything up to its SELECT: what the journal made before it is in the baselines.
    this.ownMade.clear();
  }

  /** The journal is about to store these messages of `path`: their notices wait for `ownApplied` or `ownAbandoned`. */
  expectOwn(path: string, uids: Iterable<number>): void {
    const pending = this.ownPending.get(path) ?? new Set<number>();
    for (const uid of uids) pending.add(uid);
    this.ownPending.set(path, pending);
  }

  /** The journal stored them: the MODSEQ each message came to (absent: it did not say, or did not change it). */
  ownApplied(path: string, uids: Iterable<number>, made: ReadonlyMap<number, bigint>): void {
    const pending = this.ownPending.get(path);
    // Only the watched folder's notices are judged one by one (the others' changes show in STATUS): nothing to keep for them.
    const watched = path === this.tracked[0]?.path;
    const known = this.ownMade.get(path) ?? new Map<number, bigint>();
    for (const uid of uids) {
      pending?.delete(uid);
      const modseq = made.get(uid);
      if (watched && modseq !== undefined) known.set(uid, modseq);
    }
    if (pending?.size === 0) this.ownPending.delete(path);
    if (known.size > 0) this.ownMade.set(path, known);
    this.judgeHeld();
  }

  /** The journal's attempt failed: whatever it may have changed is judged as anyone's. */
  ownAbandoned(path: string, uids: Iterable<number>): void {
    const pending = this.ownPending.get(path);
    for (const uid of uids) pending?.delete(uid);
    if (pending?.size === 0) this.ownPending.delete(path);
    this.judgeHeld();
  }

  /** Watch on this session: select the first folder, compare it, listen, and arm the sweep. Safe to call again. */
  async start(client: ImapFlow): Promise<void> {
    this.stop();
    const watched = this.tracked[0];
    if (!client.usable || !watched) return;
    this.client = client;
    this.listen(client, watched);
    this.opening = true;
    try {
      const mailbox = await client.mailboxOpen(watched.path, { readOnly: true });
      this.opening = false;
      if (this.client !== client) return; // stopped meanwhile
      this.watching = true;
      if (compareFolder(watched, selectedState(mailbox)) === 'changed') this.note(watched.alias);
      this.arm();
    } catch (err) {
      this.opening = false;
      this.deps.log.debug({ err, event: 'sync.watch-failed', folder: watched.alias }, 'sync.watch-failed');
      const lost = !client.usable;
      this.stop();
      // A session lost while watching would leave the account blind until the interval: a run opens a new one.
      if (lost) this.deps.wake([]);
    }
  }

  /** Before the session is used for anything else (a run, other work): no more sweeps, events are not ours. */
  stop(): void {
    // A notice still held is left to what follows: the run that stops the watch reads its change, and
    // `start` again compares the folder's HIGHESTMODSEQ with a baseline that never took it.
    this.held = [];
    this.watching = false;
    this.opening = false;
    this.timer?.cancel();
    this.timer = null;
    this.listeners?.off();
    this.listeners = null;
    this.client = null;
  }

  /** One sweep (the actor calls it on the scheduled message): NOOP on the selected folder, STATUS on the others. */
  async sweep(): Promise<void> {
    const client = this.client;
    this.timer = null;
    if (!this.watching || client === null) return;
    try {
      await client.noop();
      for (const folder of this.tracked.slice(1)) {
        if (this.client !== client) return;
        const now = statusState(await client.status(folder.path, { messages: true, uidNext: true, uidValidity: true, highestModseq: true }));
        if (now === null) continue; // a refused STATUS: that folder falls back to the interval
        if (compareFolder(folder, now) === 'changed') this.changed.add(folder.alias);
      }
    } catch (err) {
      // A folder gone (imapflow's NotFound) or the session lost: a run finds out which and opens a new session if it must.
      this.deps.log.debug({ err, event: 'sync.watch-sweep-failed' }, 'sync.watch-sweep-failed');
      this.stop();
      this.deps.wake([]);
      return;
    }
    if (this.client !== client) return;
    if (this.changed.size > 0) this.wakeNow();
    this.arm();
  }

  /**
   * A flag notice of the watched folder: the journal's own state (dropped; the baseline moves to its MODSEQ),
   * one of a message the journal is storing now (held, when `mayHold`), or news (the scheduler is woken).
   */
  private judge(notice: Notice, mayHold: boolean): void {
    const watched = this.tracked[0];
    if (watched === undefined) return;
    const made = this.ownMade.get(watched.path);
    if (made?.get(notice.uid) === notice.modseq) {
      made.delete(notice.uid);
      const baseline = watched.baseline;
      if (baseline?.highestModseq != null && notice.modseq > baseline.highestModseq) watched.baseline = { ...baseline, highestModseq: notice.modseq };
      return;
    }
    if (mayHold && this.ownPending.get(watched.path)?.has(notice.uid)) {
      this.held.push(notice);
      return;
    }
    this.note(watched.alias);
  }

  /** Judges the held notices again once the journal has said what it made (or that it gave up). */
  private judgeHeld(): void {
    const held = this.held;
    this.held = [];
    for (const notice of held) this.judge(notice, true);
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = this.deps.schedule(this.deps.periodMs);
  }

  private note(alias: string): void {
    if (this.changed.has(alias)) return;
    this.changed.add(alias);
    this.wakeNow();
  }

  private wakeNow(): void {
    this.deps.log.debug({ event: 'sync.watch-changed', folders: [...this.changed] }, 'sync.watch-changed');
    this.deps.wake([...this.changed]);
  }

  private listen(client: ImapFlow, watched: Tracked): void {
    const mine = (path: string | undefined): boolean => this.client === client && !this.opening && this.watching && path === watched.path;
    const onExists = (e: { path: string; count: number; prevCount: number }): void => {
      if (mine(e.path) && e.count !== e.prevCount) this.note(watched.alias);
    };
    const onChange = (e: { path: string }): void => {
      if (mine(e.path)) this.note(watched.alias);
    };
    const onFlags = (e: { path: string; uid?: number; modseq?: bigint }): void => {
      if (!mine(e.path)) return;
      if (e.uid === undefined || e.modseq === undefined) return this.note(watched.alias);
      this.judge({ uid: e.uid, modseq: e.modseq }, true);
    };
    const onClose = (): void => {
      if (this.client !== client || !this.watching) return;
      this.stop();
      this.deps.wake([]);
    };
    client.on('exists', onExists);
    client.on('expunge', onChange);
    client.on('flags', onFlags);
    client.on('highestModseq', onChange);
    client.on('mailboxOpen', onChange);
    client.on('close', onClose);
    this.listeners = {
      client,
      off() {
        client.off('exists', onExists);
        client.off('expunge', onChange);
        client.off('flags', onFlags);
        client.off('highestModseq', onChange);
        client.off('mailboxOpen', onChange);
        client.off('close', onClose);
      },
    };
  }
}
