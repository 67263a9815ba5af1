/**
 * The embedding actor's state: built in `init` (actor.ts), then read and
 * changed by this folder's modules, on the actor's one thread.
 */
import type { Database } from '../../runtime/store/open.ts';
import type { RecentWork } from '../../runtime/work-progress.ts';
import type { EmbeddingConfig, EmbeddingStatus } from './protocol.ts';
import type { EmbeddingProvider } from './provider.ts';

/** How far a generation's passes have come (passes.ts). */
export type Cursor = {
  /** The sweep of the whole store: the last message id it passed. */
  sweep: number;
  /** Arrivals: the highest message id already taken. */
  fresh: number;
};

export type EmbeddingState = {
  config: EmbeddingConfig;
  db: Database;
  /** Providers by where they are reached (`endpointKey`): the declared one, and the serving generation's while a changed profile reindexes. */
  providers: Map<string, Promise<EmbeddingProvider>>;
  /** The same, once built (for health and input bounds). */
  built: Map<string, EmbeddingProvider>;
  passing: boolean;
  /** Asked for while a pass ran: run another at once after it. */
  again: boolean;
  timer: { cancel(): void } | null;
  nextPassAt: number | null;
  waitingFor: EmbeddingStatus['waitingFor'];
  cursors: Map<number, Cursor>;
  /** Emails embedded lately, per generation (passes.ts): the pace the status reports. */
  recent: Map<number, RecentWork>;
  /** Characters reserved in the ledger for query placement and not used yet (spend.ts `spendOnQuery`). */
  queryAllowance: { periodStart: number; remaining: number };
  abort: AbortController;
};

export function initialState(config: EmbeddingConfig, db: Database): EmbeddingState {
  return {
    config,
    db,
    providers: new Map(),
    built: new Map(),
    passing: false,
    again: false,
    timer: null,
    nextPassAt: null,
    waitingFor: null,
    cursors: new Map(),
    recent: new Map(),
    queryAllowance: { periodStart: -1, remaining: 0 },
    abort: new AbortController(),
  };
}
