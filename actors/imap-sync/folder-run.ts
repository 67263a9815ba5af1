/**
 * One folder of one synchronization run, over an open IMAP session:
 * `prepare` selects the folder and brings what is already stored up to date
 * (UIDVALIDITY, flags and keywords, expunges), then each `step` fetches
 * and stores one bounded batch of new mail together with the checkpoint
 * advance, in one transaction, and asks the derivation writer to parse and
 * index it on its own thread. `settle` waits for those answers: the
 * folder's summary counts what turned out unreadable.
 *
 * Capabilities decide the path: QRESYNC reports changed flags and VANISHED
 * UIDs while selecting; CONDSTORE fetches flags changed since the stored
 * HIGHESTMODSEQ; without either, flags are swept and compared. Expunges
 * without QRESYNC are found by comparing `UID SEARCH ALL` with what is
 * stored. An unchanged HIGHESTMODSEQ with no new UID means nothing to do.
 */
import type { ImapFlow } from 'imapflow';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { Binding } from '../../runtime/store/mailbox/bindings.ts';
import { readCheckpoint } from '../../runtime/store/mailbox/checkpoints.ts';
import { recordServerCount } from '../../runtime/store/mailbox/folder-progress.ts';
import { storeBatch, type FetchedMessage } from '../../runtime/store/mailbox/store-batch.ts';
import { applyFlagChanges, knownUids, localFlags, retireUidValidity, tombstone } from '../../runtime/store/mailbox/server-changes.ts';
import type { CatchUpReply } from '../derivation/protocol.ts';
import type { ParseReply } from '../mime-parse/protocol.ts';
import { type FolderState, selectedState } from './change-watch.ts';
import { answeredBad, classifyImapFailure } from './connection.ts';
import { sameFlags, splitFlags } from './server-flags.ts';
import { noteUnreadable, type UnreadableCounts } from './unreadable.ts';

/**
 * Largest raw size fetched in one batch, whatever the message count
 * (BATCHES_AHEAD + 1 batches are in memory at once, and their socket chunks
 * and copies wait as garbage for the next collection). 4 MiB rather than
 * 16: the initial mirror of 10,000 realistic messages peaked at 392 MiB
 * against 443 (medians of 5 runs a side on a quiet machine), at the same
 * CPU and +0.5 s of wall for the more FETCH commands (docs/performance.md,
 * run MB). At 2,000 messages the peak did not move: it is the threads'
 * fixed cost (issue 34).
 */
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Batches fetched ahead of the one being stored. Two measured no faster
 * than one (docs/performance-history.md, "The initial mirror"), and one
 * holds a batch less in memory.
 */
const BATCHES_AHEAD = 1;

/** A batch on its way from the server. */
type Prefetch = { promise: Promise<{ batch: Pending[]; sources: Map<number, Buffer> }> };

type Pending = { uid: number; size: number; flags: Set<string> | undefined; modseq: bigint | null; internalDate: number | null };

export type FolderRunDeps = {
  client: ImapFlow;
  db: Database;
  account: string;
  binding: Binding & { path: string };
  batchSize: number;
  maxMessageBytes: number;
  /** Ask the derivation writer to derive the account's stored mail (answered once it has). */
  derive(): Promise<CatchUpReply>;
  now(): number;
  /** For the line per unreadable message (identities and classes only). */
  log: Logger;
};

export class FolderRun {
  stored = 0;
  oversized = 0;
  unreadable = 0;
  /** Unreadable messages by class (unreadable.ts), for the folder's summary line. */
  readonly unreadableCounts: UnreadableCounts = {};
  private readonly deps: FolderRunDeps;
  private pending: Pending[] = [];
  private uidValidity = 0;
  private expectedEpoch: number | null = null;
  private selectModseq: bigint | null = null;
  private readonly ahead: Prefetch[] = [];
  /** Derivation asks not settled yet, one per stored batch. */
  private deriving: Array<Promise<CatchUpReply>> = [];
  /** UIDs this run stored: only these count toward its stored and unreadable totals. */
  private readonly storedUids = new Set<number>();

  constructor(deps: FolderRunDeps) {
    this.deps = deps;
  }

  /** Whether `prepare` finished (the folder is selected and what was stored is up to date). */
  prepared = false;

  /** The folder as SELECT reported it: what the mirror reflects once this run is through it (the change watch's baseline). */
  selected: FolderState | null = null;

  get hasMore(): boolean {
    return this.pending.length > 0 || this.ahead.length > 0;
  }

  async prepare(): Promise<void> {
    const { client, db, binding } = this.deps;
    let checkpoint = readCheckpoint(db, binding.id);
    const useQresync = client.enabled.has('QRESYNC') && checkpoint?.highestModseq != null;
    const vanished: number[] = [];
    const changed = new Map<number, { flags: Set<string>; modseq: bigint | null }>();
    const onExpunge = (e: { uid?: number; vanished: boolean }): void => {
      if (e.vanished && e.uid !== undefined) vanished.push(e.uid);
    };
    const onFlags = (e: { uid?: number; flags: Set<string>; modseq?: bigint }): void => {
      if (e.uid !== undefined) changed.set(e.uid, { flags: e.flags, modseq: e.modseq ?? null });
    };
    client.on('expunge', onExpunge);
    client.on('flags', onFlags);
    let mailbox;
    let reported = useQresync;
    try {
      mailbox = await client.mailboxOpen(binding.path, {
        readOnly: true,
        ...(useQresync && checkpoint ? { uidValidity: checkpoint.uidValidity, changedSince: checkpoint.highestModseq! } : {}),
      });
    } catch (err) {
      // Some servers refuse a QRESYNC select whose UIDVALIDITY is stale (Dovecot 2.3 answers NO [SERVERBUG]; a server
      // that announced QRESYNC may still reject its parameters with BAD): select plainly and reconcile by comparison
      // instead. A BAD to the plain select is our defect (classifyImapFailure throws it on).
      if (!useQresync || !(answeredBad(err) || classifyImapFailure(err).code === 'E_IMAP_PROTOCOL')) throw err;
      reported = false;
      mailbox = await client.mailboxOpen(binding.path, { readOnly: true });
    } finally {
      client.off('expunge', onExpunge);
      client.off('flags', onFlags);
    }
    // imapflow answers a select on a session no longer logged in (a BYE came first) with nothing: the server is gone.
    if (!mailbox) throw new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'session-ended' } });
    // Read now: imapflow raises `mailbox.uidNext` past every UID a later FETCH answers, and Courier's SELECT
    // leaves UIDNEXT out (RFC 3501 requires it), so past this point it may be a guess from what was fetched.
    const uidNext = typeof mailbox.uidNext === 'number' ? mailbox.uidNext : null;
    this.uidValidity = Number(mailbox.uidValidity);
    this.selected = selectedState(mailbox);
    this.selectModseq = mailbox.highestModseq ?? null;
    // The total the folder's mirror is measured against (the status's progress).
    if (typeof mailbox.exists === 'number') recordServerCount(db, binding.id, mailbox.exists, this.deps.now());
    if (checkpoint && checkpoint.uidValidity !== this.uidValidity) {
      // The server renumbered the folder: retire every old copy before refetching, so nothing shows twice.
      retireUidValidity(db, binding.id, this.uidValidity, this.deps.now());
      checkpoint = readCheckpoint(db, binding.id);
    }
    this.expectedEpoch = checkpoint ? checkpoint.epoch : null;
    const lastUid = checkpoint?.lastUid ?? 0;

    if (lastUid > 0) {
      const unchanged = this.selectModseq !== null && checkpoint?.highestModseq != null && this.selectModseq === checkpoint.highestModseq;
      if (!unchanged) {
        if (reported && this.uidValidity === checkpoint?.uidValidity) await this.applyReported(vanished, changed);
        else await this.reconcileStored(lastUid, checkpoint?.highestModseq ?? null);
      }
    }
    // Without a reported UIDNEXT, whether anything is new is asked, not known.
    if (mailbox.exists > 0 && (uidNext === null || uidNext > lastUid + 1)) await this.listNew(lastUid);
    this.prepared = true;
  }

  /**
   * One batch: store it with the checkpoint advance, then ask for its
   * derivation without waiting. The next batch is fetched while this one is
   * stored (BATCHES_AHEAD), so the connection does not wait for the store,
   * and neither waits for the derivation writer. Returns whether more is
   * pending.
   */
  async step(): Promise<boolean> {
    const { db, binding, account } = this.deps;
    while (this.ahead.length < BATCHES_AHEAD && this.pending.length > 0) this.ahead.push(this.fetchNext());
    const current = this.ahead.shift() ?? this.fetchNext();
    const { batch, sources } = await current.promise;
    if (batch.length === 0) return false;
    // Keep the pipeline full while this batch is stored (storing holds this thread).
    while (this.ahead.length < BATCHES_AHEAD && this.pending.length > 0) this.ahead.push(this.fetchNext());
    const messages: FetchedMessage[] = [];
    for (const m of batch) {
      const { flags, keywords } = splitFlags(m.flags);
      const base = { uid: m.uid, flags, keywords, modseq: m.modseq, internalDate: m.internalDate, size: m.size };
      if (m.size > this.deps.maxMessageBytes) {
        this.oversized += 1;
        messages.push({ ...base, state: 'oversized', raw: null, parsed: null });
        continue;
      }
      const raw = sources.get(m.uid);
      if (!raw) continue; // expunged between listing and fetching: nothing to store
      // Stored underived: the derivation writer parses it (and may find it unreadable, counted at settle).
      this.stored += 1;
      this.storedUids.add(m.uid);
      messages.push({ ...base, state: 'stored', raw, parsed: null });
    }
    const lastUid = batch[batch.length - 1]!.uid;
    const result = storeBatch(db, {
      accountId: account,
      bindingId: binding.id,
      uidValidity: this.uidValidity,
      expectedEpoch: this.expectedEpoch,
      messages,
      advanceTo: { lastUid, highestModseq: this.selectModseq },
      now: this.deps.now(),
    });
    if (!result.ok) throw new AppError('E_SYNC_CONFLICT');
    this.expectedEpoch = result.epoch;
    if (result.inserted > 0) {
      const asked = this.deps.derive();
      asked.catch(() => {}); // settled (and its failure reported) by `settle`
      this.deriving.push(asked);
    }
    return this.hasMore;
  }

  /**
   * Wait for this folder's derivation asks, and count and log what turned
   * out unreadable. A writer that could not answer (restarted, too slow)
   * leaves the rows underived: they are listed as not indexed yet, and the
   * next catch-up takes them. Returns whether every ask was answered.
   */
  async settle(): Promise<boolean> {
    const asked = this.deriving;
    this.deriving = [];
    let answered = true;
    for (const settled of await Promise.allSettled(asked)) {
      if (settled.status === 'rejected') {
        answered = false;
        continue;
      }
      for (const u of settled.value.unreadable) this.noteUnreadable(u.bindingId, u.uid, u.failure);
    }
    return answered;
  }

  /**
   * One message the writer found unreadable: counted when this run stored
   * it. One an earlier run left underived is logged only, under this
   * folder's alias or, from another folder, its binding id.
   */
  private noteUnreadable(bindingId: number, uid: number, failure: ParseReply): void {
    if (bindingId !== this.deps.binding.id) {
      noteUnreadable(this.deps.log, {}, failure, { binding: bindingId, uid });
      return;
    }
    const mine = this.storedUids.has(uid);
    if (mine) {
      this.stored -= 1;
      this.unreadable += 1;
    }
    noteUnreadable(this.deps.log, mine ? this.unreadableCounts : {}, failure, { folder: this.deps.binding.alias, uid });
  }

  /**
   * Once fetching ended: the folder's count as the session knows it now
   * (EXISTS and EXPUNGE answers since the SELECT included), so a message
   * expunged between listing and fetching does not leave the total above
   * what can ever be stored.
   */
  recordFinalCount(): void {
    const mailbox = this.deps.client.mailbox;
    if (mailbox && typeof mailbox.exists === 'number') recordServerCount(this.deps.db, this.deps.binding.id, mailbox.exists, this.deps.now());
  }

  /** Whether the session this folder runs on is still open (the classifier reads it): not after the server's BYE. */
  get session(): { readonly usable: boolean } {
    const client = this.deps.client as ImapFlow & { state?: unknown; states?: { LOGOUT?: unknown } };
    return { usable: client.usable && (client.states === undefined || client.state !== client.states.LOGOUT) };
  }

  /** Take the next batch off the pending list and start fetching its sources. */
  private fetchNext(): Prefetch {
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.pending.length > 0 && batch.length < this.deps.batchSize) {
      const next = this.pending[0]!;
      const counted = next.size <= this.deps.maxMessageBytes ? next.size : 0;
      if (batch.length > 0 && bytes + counted > BATCH_BYTES) break;
      batch.push(this.pending.shift()!);
      bytes += counted;
    }
    const wanted = batch.filter((m) => m.size <= this.deps.maxMessageBytes).map((m) => m.uid);
    const promise = (async () => {
      const sources = new Map<number, Buffer>();
      if (wanted.length > 0) {
        for await (const msg of this.deps.client.fetch(wanted.join(','), { uid: true, source: true }, { uid: true })) {
          // An unsolicited FETCH (another client changed flags) has no UID and is not an answer to this one.
          if (msg.source && typeof msg.uid === 'number' && wanted.includes(msg.uid)) sources.set(msg.uid, msg.source);
        }
        await this.checkAnswers(batch, wanted, sources);
      }
      return { batch, sources };
    })();
    // A run that ends early (conflict, shutdown) may leave a prefetch behind: never an unhandled rejection.
    promise.catch(() => {});
    return { promise };
  }

  /**
   * The fetch answer checked against the listing before the checkpoint may
   * pass these UIDs (docs/sync.md, "Answers checked"). A UID listed but not
   * answered is skipped only when the server no longer holds it (expunged
   * meanwhile); still there, its answer was lost in garbage, and skipping it
   * would leave it out of the mirror for good. A source whose length is not
   * the listed RFC822.SIZE is fetched once more: kept when the second answer
   * has the listed size or repeats the first (a server whose sizes are
   * estimates), else the answer is not usable.
   */
  private async checkAnswers(batch: Pending[], wanted: number[], sources: Map<number, Buffer>): Promise<void> {
    const client = this.deps.client;
    const missing = wanted.filter((uid) => !sources.has(uid));
    if (missing.length > 0) {
      const still = await client.search({ uid: missing.join(',') }, { uid: true });
      if (!Array.isArray(still) || still.length > 0) throw new AppError('E_IMAP_PROTOCOL', { details: { cause: 'fetch-answer-missing' } });
    }
    for (const m of batch) {
      const first = sources.get(m.uid);
      if (first === undefined || first.length === m.size) continue;
      const again = await client.fetchOne(String(m.uid), { uid: true, source: true }, { uid: true });
      const second = again ? again.source : undefined;
      if (second === undefined || !(second.length === m.size || second.equals(first))) {
        throw new AppError('E_IMAP_PROTOCOL', { details: { cause: 'fetch-size-mismatch' } });
      }
      sources.set(m.uid, second);
    }
  }

  private async applyReported(vanished: number[], changed: Map<number, { flags: Set<string>; modseq: bigint | null }>): Promise<void> {
    const { db, binding } = this.deps;
    const now = this.deps.now();
    if (vanished.length > 0) tombstone(db, binding.id, this.uidValidity, vanished, 'expunged', now);
    const changes = [...changed].map(([uid, c]) => ({ uid, ...splitFlags(c.flags), modseq: c.modseq }));
    applyFlagChanges(db, binding.id, this.uidValidity, changes, this.selectModseq, now);
  }

  /** Without QRESYNC: flags changed since the stored HIGHESTMODSEQ (CONDSTORE) or all of them, and expunges by comparison. */
  private async reconcileStored(lastUid: number, since: bigint | null): Promise<void> {
    const { client, db, binding } = this.deps;
    const condstore = client.enabled.has('CONDSTORE') && since !== null;
    const known = localFlags(db, binding.id, this.uidValidity);
    const changes: Array<{ uid: number; flags: string[]; keywords: string[]; modseq: bigint | null }> = [];
    for await (const msg of client.fetch(
      `1:${lastUid}`,
      { uid: true, flags: true, ...(condstore ? { modseq: true } : {}) },
      { uid: true, ...(condstore ? { changedSince: since } : {}) },
    )) {
      const split = splitFlags(msg.flags);
      const local = known.get(msg.uid);
      if (local && !sameFlags(split, local)) changes.push({ uid: msg.uid, ...split, modseq: msg.modseq ?? null });
    }
    // No list (imapflow answers false to a SEARCH it could not read) is no answer, not an empty folder: taking it for
    // one would tombstone every stored message.
    const listed = await client.search({ all: true }, { uid: true });
    if (!Array.isArray(listed)) throw new AppError('E_IMAP_PROTOCOL', { details: { cause: 'search-unanswered' } });
    const onServer = new Set(listed);
    const gone = [...knownUids(db, binding.id, this.uidValidity)].filter((uid) => uid <= lastUid && !onServer.has(uid));
    const now = this.deps.now();
    if (gone.length > 0) tombstone(db, binding.id, this.uidValidity, gone, 'expunged', now);
    applyFlagChanges(db, binding.id, this.uidValidity, changes, this.selectModseq, now);
  }

  private async listNew(lastUid: number): Promise<void> {
    const found: Pending[] = [];
    const modseq = this.deps.client.enabled.has('CONDSTORE');
    for await (const msg of this.deps.client.fetch(
      `${lastUid + 1}:*`,
      { uid: true, flags: true, size: true, internalDate: true, ...(modseq ? { modseq: true } : {}) },
      { uid: true },
    )) {
      // `N:*` also answers the highest message when N is above it: keep only what is new. An unsolicited FETCH has no UID.
      if (typeof msg.uid !== 'number' || msg.uid <= lastUid) continue;
      const date = msg.internalDate instanceof Date ? msg.internalDate.getTime() : typeof msg.internalDate === 'string' ? Date.parse(msg.internalDate) : null;
      found.push({ uid: msg.uid, size: msg.size ?? 0, flags: msg.flags, modseq: msg.modseq ?? null, internalDate: Number.isFinite(date) ? date : null });
    }
    found.sort((a, b) => a.uid - b.uid);
    this.pending = found;
  }
}
