/**
 * Which accounts synchronize when. Pure: the actor owns the timer.
 *
 * Every account is in one of the spec's phases: running; ready and waiting
 * for one of the `MaxConcurrentAccounts` slots; waiting out the delay its
 * last run chose (with the next due instant). A run that failed as a whole
 * grows the delay (doubling from `Backoff:Initial` to `Backoff:Maximum`, with
 * jitter); a run that left more to fetch is due again at once but queues
 * behind accounts already waiting, so one large mailbox cannot starve the rest.
 */
import type { Random } from '../../runtime/clock.ts';

export type Phase = 'not-started' | 'waiting-for-slot' | 'running' | 'waiting';
/** `storage-full`: the run found the disk under the store full (docs/operations.md "A full disk"). */
export type RunEnd = 'ok' | 'partial' | 'failed' | 'interrupted' | 'down' | 'storage-full';

export type SchedulePolicy = { maxConcurrent: number; intervalMs: number; backoffInitialMs: number; backoffMaxMs: number; jitter: number };

export type AccountSchedule = { account: string; phase: Phase; nextDueAt: number | null; consecutiveFailures: number; readyAt: number };

export class Schedule {
  private readonly accounts = new Map<string, AccountSchedule>();
  private readonly policy: SchedulePolicy;
  private readonly random: Random;
  /** Accounts woken while running: the run may have passed the changed folder already, so they are due again when it ends. */
  private readonly wokenWhileRunning = new Set<string>();

  constructor(accounts: readonly string[], policy: SchedulePolicy, random: Random, now: number, enabled: boolean) {
    this.policy = policy;
    this.random = random;
    for (const account of accounts) {
      this.accounts.set(account, {
        account,
        phase: enabled ? 'waiting' : 'not-started',
        nextDueAt: enabled ? now : null,
        consecutiveFailures: 0,
        readyAt: now,
      });
    }
  }

  list(): AccountSchedule[] {
    return [...this.accounts.values()].map((a) => ({ ...a }));
  }

  /** Move due accounts to ready, then give free slots to the longest-ready; returns the accounts to start now. */
  start(now: number): string[] {
    for (const a of this.accounts.values()) {
      if (a.phase === 'waiting' && a.nextDueAt !== null && a.nextDueAt <= now) {
        a.phase = 'waiting-for-slot';
        a.readyAt = a.nextDueAt;
        a.nextDueAt = null;
      }
    }
    const running = [...this.accounts.values()].filter((a) => a.phase === 'running').length;
    const ready = [...this.accounts.values()].filter((a) => a.phase === 'waiting-for-slot').sort((x, y) => x.readyAt - y.readyAt);
    const starting = ready.slice(0, Math.max(0, this.policy.maxConcurrent - running));
    for (const a of starting) a.phase = 'running';
    return starting.map((a) => a.account);
  }

  ended(account: string, end: RunEnd, hasMore: boolean, now: number): void {
    const a = this.accounts.get(account);
    if (a?.phase !== 'running') return;
    const failed = end === 'failed' || end === 'down' || end === 'storage-full';
    a.consecutiveFailures = failed ? a.consecutiveFailures + 1 : 0;
    a.phase = 'waiting';
    const woken = this.wokenWhileRunning.delete(account);
    // A full disk is looked at again at the first delay, not a growing one: space freed is used soon after.
    if (end === 'storage-full') a.nextDueAt = now + this.backoff(1);
    else if (failed) a.nextDueAt = now + this.backoff(a.consecutiveFailures);
    else if (hasMore || woken) a.nextDueAt = now;
    else a.nextDueAt = now + this.policy.intervalMs;
    // More to fetch queues behind whoever was already ready.
    a.readyAt = hasMore && !failed ? now + 1 : now;
  }

  /**
   * A change was seen on the server: a waiting account is due now; a running
   * one is due again as soon as its run ends (the run may already have passed
   * the folder that changed). A failing one keeps its backoff; one waiting for
   * a slot will run anyway.
   */
  wake(account: string, now: number): void {
    const a = this.accounts.get(account);
    if (a?.phase === 'running') {
      this.wokenWhileRunning.add(account);
      return;
    }
    if (a?.phase !== 'waiting' || a.consecutiveFailures > 0) return;
    a.nextDueAt = Math.min(a.nextDueAt ?? now, now);
  }

  /** When the next account becomes due, or null when none waits on time. */
  nextDueAt(): number | null {
    let next: number | null = null;
    for (const a of this.accounts.values()) if (a.phase === 'waiting' && a.nextDueAt !== null) next = next === null ? a.nextDueAt : Math.min(next, a.nextDueAt);
    return next;
  }

  private backoff(failures: number): number {
    const raw = Math.min(this.policy.backoffMaxMs, this.policy.backoffInitialMs * 2 ** Math.max(0, failures - 1));
    const spread = raw * this.policy.jitter;
    return Math.round(Math.min(this.policy.backoffMaxMs, raw - spread + 2 * spread * this.random.next()));
  }
}
