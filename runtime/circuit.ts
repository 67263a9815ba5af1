/**
 * A circuit breaker over calls to one provider (an embedding provider, the
 * spam engine), and the health it reports.
 * Closed: calls go out. After `failuresToOpen` failed calls in a row it
 * opens: calls are refused at once (a provider that is down is not helped by
 * more load, and a stuck queue should fail fast, not wait out every
 * deadline). When `coolDownMs` has passed, one trial call goes out
 * (half-open); its success closes the circuit, its failure opens it for
 * another cool-down. Pure state over an injected clock: the caller owns the
 * I/O and reports each call's outcome.
 *
 * Importable from anywhere.
 */
import type { Clock } from './clock.ts';

/** A failure, named by class (`timeout`, `refused`, `status-503`...): never a body or an address. */
export type FailureClass = string;

/** What a circuit reports: `healthy`, `failing` (calls still go out), or `open` (refused until the cool-down ends). */
export type CircuitHealth = {
  readonly state: 'healthy' | 'failing' | 'open';
  /** Since when it has been in this state (epoch ms); null before any call. */
  readonly since: number | null;
  readonly lastFailure: FailureClass | null;
  readonly consecutiveFailures: number;
};

export type CircuitPolicy = {
  /** Failed calls in a row that open the circuit. */
  readonly failuresToOpen: number;
  /** How long an open circuit refuses calls before letting a trial through. */
  readonly coolDownMs: number;
};

export const DEFAULT_CIRCUIT: CircuitPolicy = { failuresToOpen: 5, coolDownMs: 30_000 };

type Position = 'closed' | 'open' | 'half-open';

/** What happened to the circuit as a call ended, for the caller to log. */
export type Transition = 'opened' | 'closed' | null;

export class Circuit {
  private position: Position = 'closed';
  private failures = 0;
  private lastFailure: FailureClass | null = null;
  private since: number | null = null;
  private openedAt = 0;
  private readonly policy: CircuitPolicy;
  private readonly clock: Clock;

  constructor(policy: CircuitPolicy, clock: Clock) {
    this.policy = policy;
    this.clock = clock;
  }

  /** Whether a call may go out now. A true answer in half-open is the one trial: report its outcome. */
  admit(): boolean {
    if (this.position === 'closed') return true;
    if (this.position === 'half-open') return false; // the trial is still out
    if (this.clock.now() - this.openedAt < this.policy.coolDownMs) return false;
    this.position = 'half-open';
    return true;
  }

  succeeded(): Transition {
    const was = this.position;
    if (was !== 'closed' || this.failures > 0 || this.since === null) this.since = this.clock.now();
    this.position = 'closed';
    this.failures = 0;
    this.lastFailure = null;
    return was === 'closed' ? null : 'closed';
  }

  failed(failure: FailureClass): Transition {
    const now = this.clock.now();
    this.failures += 1;
    this.lastFailure = failure;
    if (this.position === 'half-open') {
      // The trial failed: another cool-down, from now; the state has been open since it first opened.
      this.position = 'open';
      this.openedAt = now;
      return null;
    }
    if (this.failures === 1) this.since = now;
    if (this.position === 'closed' && this.failures >= this.policy.failuresToOpen) {
      this.position = 'open';
      this.openedAt = now;
      this.since = now;
      return 'opened';
    }
    return null;
  }

  /** A call ended in a way that says nothing about the provider (the caller gave up, the request was refused as such). */
  released(): void {
    if (this.position === 'half-open') this.position = 'open'; // no verdict: wait out no new cool-down, try again at once
  }

  health(): CircuitHealth {
    const state = this.position === 'open' ? 'open' : this.failures > 0 || this.position === 'half-open' ? 'failing' : 'healthy';
    return { state, since: this.since, lastFailure: this.lastFailure, consecutiveFailures: this.failures };
  }
}
