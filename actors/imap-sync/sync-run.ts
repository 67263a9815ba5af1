/**
 * One synchronization run of an account, advanced one unit at a time by
 * the actor (`step`), so that other messages — a rewind, an erasure pass,
 * the stop at shutdown — are handled between two batches.
 *
 * Units: open the session and resolve the folder aliases; then per folder
 * `prepare` and bounded batches. A run fetches at most BATCHES_PER_RUN
 * batches and then ends with "more to fetch", so one large mailbox does not
 * hold a slot while others wait.
 *
 * Outcomes per folder follow the spec: no-such-folder, ambiguous-folder,
 * server-unresponsive (the rest of the run is deferred with it),
 * concurrency-conflict (a rewind moved the checkpoint), unexpected (a server
 * answer we cannot use, or one of our own codes; the cause is logged here),
 * interrupted (shutdown; resumes from the checkpoint). A defect or a
 * database error is none of these: it crashes the actor, and the restarted
 * actor closes the run as interrupted. A full disk under the store is an
 * outside condition: the run ends `failed` (failure code E_STORE_FULL), so
 * the scheduler backs off as for an outage; each batch is one transaction,
 * so what was committed stays whole and the next run resumes from the
 * checkpoint (docs/operations.md "A full disk").
 *
 * Each folder's end is also one `mailcairn.sync.run.duration` measurement
 * (from the folder's start to its record; 0 for a folder never begun),
 * labelled with the account, the alias and the folder's outcome as
 * recorded (`ok` or one of the above).
 */
import type { ImapFlow } from 'imapflow';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import { isStorageFull, namedStorageFull, noteStorageFull, noteStorageWritable } from '../../runtime/storage-full.ts';
import type { Database } from '../../runtime/store/open.ts';
import { histogram } from '../../runtime/telemetry/instruments.ts';
import { syncBindings, type Binding } from '../../runtime/store/mailbox/bindings.ts';
import { beginRun, endRun, recordFolderRun, type FolderOutcome } from '../../runtime/store/mailbox/runs.ts';
import type { CatchUpReply } from '../derivation/protocol.ts';
import { lastUnderivedId } from '../../runtime/store/mailbox/underived.ts';
import { resolveAliases, type AliasResolution } from './folder-aliases.ts';
import { classifyImapFailure, imapFailureFields } from './connection.ts';
import type { RunFolder } from './change-watch.ts';
import { FolderRun } from './folder-run.ts';
import { noteUnreadable } from './unreadable.ts';
import { type Context, type OpenSpan, openSpan } from '../../runtime/telemetry/open-span.ts';
import { SpanKind } from '../../runtime/telemetry/tracing.ts';
import type { ImapSyncConfig, RunSummary } from './protocol.ts';

export const BATCHES_PER_RUN = 50;

/** The failures a folder records as `server-unresponsive`: the mail server or the token endpoint did not answer. */
function isOutage(code: string): boolean {
  return code === 'E_IMAP_UNRESPONSIVE' || code === 'E_OAUTH_UNAVAILABLE';
}

type FolderSlot = {
  resolution: AliasResolution;
  binding: Binding;
  run: FolderRun | null;
  startedAt: number;
  retried: boolean;
  outcome: FolderOutcome | 'ok' | null;
  /** The folder's `imap.sync` span, opened when its work begins, ended with its outcome. */
  span: OpenSpan | null;
};

export type SyncRunDeps = {
  db: Database;
  config: ImapSyncConfig;
  log: Logger;
  /** The account's session; `fresh` closes the current one first (a server that lost track of a folder). */
  session(fresh?: boolean): Promise<ImapFlow>;
  /** Ask the derivation writer to derive the account's stored mail not derived yet; `parent`: the trace the ask is part of. */
  derive(parent?: Context): Promise<CatchUpReply>;
  now(): number;
  /** Where the run began (the context of the handler of the ask that started it: `ctx.trace`), the parent of its folders' spans. */
  trace?: Context | undefined;
};

export class SyncRun {
  private readonly deps: SyncRunDeps;
  private readonly runId: number;
  private folders: FolderSlot[] | null = null;
  private index = 0;
  private batches = 0;
  private failed = 0;
  private hasMore = false;
  /** Whether this run asked the derivation writer for anything. */
  private asked = false;
  private ended: RunSummary | null = null;
  /** Why the run failed as a whole (no usable session), for the actor to decide whether to stop. */
  failureCode: string | null = null;
  constructor(deps: SyncRunDeps) {
    this.deps = deps;
    this.runId = beginRun(deps.db, deps.config.account, deps.now());
  }

  get summary(): RunSummary | null {
    return this.ended;
  }

  /** Do one unit of work; returns the summary once the run has ended. */
  async step(consecutiveFailures: number): Promise<RunSummary | null> {
    if (this.ended) return this.ended;
    try {
      if (this.folders === null) {
        await this.resolve();
        return null;
      }
      const slot = this.folders[this.index];
      if (!slot) {
        await this.deriveLeftovers();
        const summary = this.finish(this.failed === 0 ? 'ok' : 'partial', consecutiveFailures);
        noteStorageWritable(this.deps.log, this.place);
        return summary;
      }
      const storedBefore = slot.run?.stored ?? 0;
      await this.advance(slot);
      // Only a batch of mail landing (or a whole run) says the disk takes the mirror's writes again: the
      // small writes of selecting a folder still fit on a disk too full for the next batch.
      if ((slot.run?.stored ?? 0) > storedBefore) noteStorageWritable(this.deps.log, this.place);
      return null;
    } catch (err) {
      if (isStorageFull(err)) return this.storageFull(err, consecutiveFailures);
      // What the session or LIST threw, classified (a defect or a database error is thrown on from here).
      const failure = classifyImapFailure(err);
      if (failure.code.startsWith('E_IMAP_') || failure.code.startsWith('E_OAUTH')) {
        // No usable session: every folder not yet done is deferred with the run.
        this.failureCode = failure.code;
        this.deps.log.warn({ event: 'sync.run-failed', reason: failure.code }, 'sync.run-failed');
        const outcome: FolderOutcome = isOutage(failure.code) ? 'server-unresponsive' : 'unexpected';
        for (const slot of (this.folders ?? []).slice(this.index)) this.record(slot, outcome);
        this.index = this.folders?.length ?? 0;
        return this.finish('failed', consecutiveFailures);
      }
      throw err;
    }
  }

  /** Where a full disk is reported from: the account's sync actor. */
  private get place(): string {
    return `imap-sync:${this.deps.config.account}`;
  }

  /**
   * The disk under the store is full: the run ends failed, so the scheduler
   * backs off. Its bookkeeping (folder outcomes, the run's end) is written
   * where the disk still takes it and skipped where it does not; the
   * checkpoints are what resumes the mirror, and they moved only with
   * batches that were stored whole.
   */
  private storageFull(err: unknown, consecutiveFailures: number): RunSummary {
    this.failureCode = 'E_STORE_FULL';
    noteStorageFull(this.deps.log, this.place, err);
    const rest = (this.folders ?? []).slice(this.index);
    this.index = this.folders?.length ?? 0;
    try {
      for (const slot of rest) this.record(slot, 'unexpected');
    } catch (again) {
      if (!isStorageFull(again)) throw again;
    }
    try {
      this.finish('failed', consecutiveFailures);
    } catch (again) {
      if (!isStorageFull(again)) throw again;
    }
    this.ended = { outcome: 'failed', foldersFailed: this.failed, hasMore: this.hasMore, waitsFor: 'storage' };
    return this.ended;
  }

  /**
   * The folders this run resolved, in configured order, each with the state
   * its SELECT reported when the folder ended `ok` (null otherwise): the
   * change watch's baselines.
   */
  watchFolders(): RunFolder[] {
    return (this.folders ?? []).flatMap((slot) =>
      slot.resolution.outcome === 'ok'
        ? [{ alias: slot.resolution.alias, path: slot.resolution.path, selected: slot.outcome === 'ok' ? (slot.run?.selected ?? null) : null }]
        : [],
    );
  }

  /** Shutdown: what was under way is recorded as interrupted; the checkpoint holds what was committed. */
  interrupt(consecutiveFailures: number): RunSummary {
    const slot = this.folders?.[this.index];
    if (slot) this.record(slot, 'interrupted');
    this.index = this.folders?.length ?? 0;
    return this.finish('interrupted', consecutiveFailures);
  }

  private async resolve(): Promise<void> {
    const { db, config } = this.deps;
    const client = await this.deps.session();
    const listed = await client.list();
    const remote = listed.map((f) => ({ path: f.path, specialUse: f.specialUse ?? null, flags: [...(f.flags ?? [])] }));
    const resolutions = resolveAliases(config.folders, remote);
    const bindings = syncBindings(
      db,
      config.account,
      resolutions.map((r) => ({ alias: r.alias, path: r.path })),
      this.deps.now(),
    );
    this.folders = resolutions.map((resolution) => ({
      resolution,
      binding: bindings.find((b) => b.alias === resolution.alias)!,
      run: null,
      startedAt: this.deps.now(),
      retried: false,
      outcome: null,
      span: null,
    }));
  }

  /** One unit of the folder's work, inside its span (what it asks of other actors is a child). */
  private advance(slot: FolderSlot): Promise<void> {
    slot.span ??= this.folderSpan(slot);
    return slot.span.run(() => this.advanceIn(slot));
  }

  /**
   * `imap.sync`: one folder of one run, named by its configured alias (never
   * its server path), with the account and the configured server.
   */
  private folderSpan(slot: FolderSlot): OpenSpan {
    const { account, imap } = this.deps.config;
    return openSpan('imap.sync', {
      kind: SpanKind.CLIENT,
      ...(this.deps.trace !== undefined ? { parent: this.deps.trace } : {}),
      attributes: { 'mailcairn.account': account, 'mailcairn.folder': slot.resolution.alias, 'server.address': imap.host, 'server.port': imap.port },
    });
  }

  private async advanceIn(slot: FolderSlot): Promise<void> {
    if (slot.resolution.outcome !== 'ok') {
      this.record(slot, slot.resolution.outcome);
      return this.next();
    }
    try {
      if (slot.run === null) {
        slot.startedAt = this.deps.now();
        slot.run = new FolderRun({
          client: await this.deps.session(),
          db: this.deps.db,
          account: this.deps.config.account,
          binding: { ...slot.binding, path: slot.resolution.path },
          batchSize: this.deps.config.batchSize,
          maxMessageBytes: this.deps.config.maxMessageBytes,
          derive: () => {
            this.asked = true;
            // After awaits (the fetch): the folder's span is named, not looked up (telemetry/sync-context.ts).
            return this.deps.derive(slot.span?.context);
          },
          now: this.deps.now,
          log: this.deps.log,
        });
        await slot.run.prepare();
        if (!slot.run.hasMore) return await this.completeFolder(slot);
        return;
      }
      if (this.batches >= BATCHES_PER_RUN) {
        this.hasMore = true;
        return await this.completeFolder(slot);
      }
      this.batches += 1;
      if (!(await slot.run.step())) await this.completeFolder(slot);
    } catch (err) {
      // A full disk ends the run (step); it is no folder's failure.
      if (isStorageFull(err)) throw namedStorageFull(err);
      // A defect or a database error is not classified: it is thrown on and crashes the actor.
      const failure = classifyImapFailure(err, slot.run?.session);
      // No usable session (the server gone, the login refused, the token endpoint's answer): the run fails as a whole.
      if (failure.code === 'E_IMAP_UNRESPONSIVE' || failure.code === 'E_IMAP_AUTH' || failure.code === 'E_IMAP_TLS' || failure.code.startsWith('E_OAUTH_'))
        throw failure;
      if (failure.code === 'E_IMAP_PROTOCOL' && !slot.retried && slot.run !== null && !slot.run.prepared) {
        // A server may refuse a folder on a session that outlived a change to it (Dovecot: "Mailbox was
        // deleted under us" after the folder was recreated). Try once more on a new session.
        slot.retried = true;
        slot.run = null;
        await this.deps.session(true);
        return;
      }
      if (failure.code === 'E_SYNC_CONFLICT') {
        await this.settle(slot);
        this.record(slot, 'concurrency-conflict');
        return this.next();
      }
      // The cause, without what imapflow's error quotes (commands, server text, parser context): only its codes.
      const cause = err instanceof AppError ? { err } : { imap: imapFailureFields(err) };
      this.deps.log.error({ ...cause, event: 'sync.folder-failed', folder: slot.resolution.alias }, 'sync.folder-failed');
      await this.settle(slot);
      this.record(slot, 'unexpected');
      return this.next();
    }
  }

  private async completeFolder(slot: FolderSlot): Promise<void> {
    if (slot.run !== null && !slot.run.hasMore) slot.run.recordFinalCount();
    await this.settle(slot);
    this.record(slot, 'ok');
    this.next();
  }

  /** The folder's derivation answered (or given up on: its rows stay listed as not indexed yet). */
  private async settle(slot: FolderSlot): Promise<void> {
    if (slot.run === null || (await slot.run.settle())) return;
    this.deps.log.warn({ event: 'sync.derivation-deferred', folder: slot.resolution.alias }, 'sync.derivation-deferred');
  }

  /**
   * A run that stored nothing still catches up what an earlier one left
   * underived (the writer restarted under it, or the service stopped).
   */
  private async deriveLeftovers(): Promise<void> {
    if (this.asked || lastUnderivedId(this.deps.db, this.deps.config.account) === 0) return;
    this.asked = true;
    try {
      const reply = await this.deps.derive();
      for (const u of reply.unreadable) noteUnreadable(this.deps.log, {}, u.failure, { binding: u.bindingId, uid: u.uid });
    } catch {
      this.deps.log.warn({ event: 'sync.derivation-deferred' }, 'sync.derivation-deferred');
    }
  }

  private next(): void {
    this.index += 1;
  }

  private record(slot: FolderSlot, outcome: FolderOutcome | 'ok'): void {
    slot.outcome = outcome;
    this.endSpan(slot, outcome);
    if (outcome !== 'ok') this.failed += 1;
    const run = slot.run;
    if (run && run.unreadable > 0) {
      // The folder's count by class (each message had its own line): a parser regression shows as parser-failed:<class>.
      const level = Object.keys(run.unreadableCounts).some((c) => !(c === 'empty' || c === 'no-header')) ? 'warn' : 'info';
      this.deps.log[level](
        { event: 'sync.folder-unreadable', folder: slot.resolution.alias, unreadable: run.unreadable, byClass: run.unreadableCounts },
        'sync.folder-unreadable',
      );
    }
    const endedAt = this.deps.now();
    // Forwarded to the main thread by the telemetry SDK's thread provider; a no-op with telemetry off.
    // A folder never begun (no such folder, or deferred with a failed run) took no time of its own.
    const seconds = run === null ? 0 : Math.max(0, endedAt - slot.startedAt) / 1000;
    histogram('syncRunDuration').record(seconds, {
      'mailcairn.account': this.deps.config.account,
      'mailcairn.folder': slot.resolution.alias,
      'mailcairn.outcome': outcome,
    });
    recordFolderRun(this.deps.db, this.runId, slot.binding.id, {
      startedAt: slot.startedAt,
      endedAt,
      outcome,
      stored: run?.stored ?? 0,
      oversized: run?.oversized ?? 0,
      unreadable: run?.unreadable ?? 0,
      hasMore: outcome === 'ok' ? (run?.hasMore ?? false) : false,
    });
  }

  /** The folder's span ends with its outcome and counts; any outcome but ok or interrupted is its failure (the outcome as error.type). */
  private endSpan(slot: FolderSlot, outcome: FolderOutcome | 'ok'): void {
    const span = slot.span;
    if (span === null) return; // deferred with a failed run before its work began: no span
    const run = slot.run;
    span.span.setAttributes({
      'mailcairn.outcome': outcome,
      'mailcairn.messages.stored': run?.stored ?? 0,
      'mailcairn.messages.unreadable': run?.unreadable ?? 0,
    });
    span.end(outcome === 'ok' || outcome === 'interrupted' ? undefined : { code: outcome });
  }

  private finish(outcome: RunSummary['outcome'], consecutiveFailures: number): RunSummary {
    const summary: RunSummary = { outcome, foldersFailed: this.failed, hasMore: this.hasMore };
    endRun(this.deps.db, this.runId, {
      endedAt: this.deps.now(),
      outcome,
      foldersFailed: this.failed,
      consecutiveFailures: outcome === 'failed' ? consecutiveFailures + 1 : 0,
      nextDueAt: null,
    });
    this.ended = summary;
    return summary;
  }
}
