/**
 * The material behind secret references, held in memory for the request
 * path and re-checked off it (issue 11: before, every request read every
 * key file synchronously on the main thread). Rotation still needs no
 * restart (spec: agent-surface, ARCHITECTURE 4); what changes is when a
 * rewritten file is seen: within a bound, not on the very next request.
 *
 * Freshness. Each reference's material carries the instant its last check
 * started (`confirmedAt`).
 * - `read(ref)` answers from memory and never does I/O. When the material is
 *   `refreshMs` (1 s) old it starts a check in the background and answers
 *   with what it holds.
 * - `fresh(refs)` is what a request awaits before judging a credential: it
 *   resolves at once (no I/O) unless some material is `maxAgeMs` (2 s) old or
 *   was never read, as after an idle spell; then it waits for that check,
 *   which is asynchronous and never longer than `checkTimeoutMs` (a check
 *   that does not answer by then counts as failed).
 * So a request that awaited `fresh` is judged against material whose check
 * started at most `maxAgeMs` before the request arrived: a rewritten,
 * deleted or unreadable file takes effect within 2 s (within about 1 s
 * under steady traffic, where the background checks keep it younger).
 *
 * Check. A file reference (`file:`, `systemd:`) is `stat`ed asynchronously,
 * and read again (asynchronously) only when the file's identity or
 * modification changed (device, inode, size, mtime and ctime, in ns) or its
 * mtime lies within `RACY_MS` of the last read: a same-size rewrite inside
 * the file system's timestamp granularity would otherwise look unchanged
 * (git's "racily clean" entries). An `env:` reference is looked up at each
 * use, in memory, as before.
 *
 * Failure. A check that fails (the file vanished, became unreadable, is a
 * directory, or is empty) replaces the material: the old material is
 * dropped, so a deleted key stops working, and `read` throws
 * E_CONFIG_SECRET_UNREADABLE (scheme and setting, never the path) until a
 * later check reads the file again. Logging is the caller's:
 * authenticate.ts names the entry at error on each refused use.
 *
 * Importable from http/ (the authentication stages, attachment links).
 */
import { readFile, stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Clock } from './clock.ts';
import { AppError } from './errors.ts';
import { parseSecretRef, secretFileUnreadable, secretMaterial, secretTarget } from './secret-ref.ts';

/** A check is started for material this old, without anyone waiting for it. */
export const SECRET_REFRESH_MS = 1_000;
/** Material this old is not used: the request waits for its check. The rotation bound. */
export const SECRET_MAX_AGE_MS = 2_000;
const CHECK_TIMEOUT_MS = 5_000;
/** A file modified this close to when it was read is read again at the next check. */
const RACY_MS = 2_000;

export type SecretCache = {
  /** Resolves once the material of every ref was checked within `maxAgeMs`; at once, with no I/O, in the steady state. Never rejects. */
  fresh(refs: readonly string[]): Promise<void>;
  /**
   * The material in memory (no I/O; a due check starts in the background).
   * @throws AppError E_CONFIG_SECRET_UNREADABLE: the last check failed, or none has finished yet.
   */
  read(ref: string): string;
  /** Start the first check of each ref without waiting (at startup). */
  warm(refs: readonly string[]): void;
};

/** What a check needs of the file system; node:fs/promises by default (tests count the calls). */
export type SecretFiles = {
  stat(path: string): Promise<{ dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint; mtimeMs: bigint }>;
  readFile(path: string): Promise<string>;
};

export type SecretCacheOptions = {
  env?: NodeJS.ProcessEnv;
  /** Named in failures (`McpEndpoint:Authentication`), never the path. */
  setting?: string;
  /** Monotonic milliseconds (performance.now by default). */
  clock?: Clock;
  files?: SecretFiles;
  refreshMs?: number;
  maxAgeMs?: number;
  checkTimeoutMs?: number;
};

const nodeFiles: SecretFiles = {
  stat: (path) => stat(path, { bigint: true }),
  readFile: (path) => readFile(path, 'utf8'),
};

type Outcome = { kind: 'material'; material: string } | { kind: 'failed'; error: AppError };

type State = {
  readonly ref: string;
  /** Named in a failure the file system gives no reason for (a timeout). */
  readonly scheme: 'file' | 'systemd';
  /** Undefined until the first check finishes. */
  outcome?: Outcome;
  /** When the check that gave `outcome` started (clock ms). */
  confirmedAt: number;
  /** The file `outcome`'s material was read from, unless it may have changed unseen since (racy). */
  signature?: string;
  inflight?: Promise<void>;
  /** Bumped when a check settles, so that a timed-out check answering late changes nothing. */
  generation: number;
};

const RESOLVED: Promise<void> = Promise.resolve();

/** Ages are measured on a clock that never goes back (a wall-clock step would make material look fresh). */
const monotonic: Clock = { now: () => performance.now() };

export function createSecretCache(options: SecretCacheOptions = {}): SecretCache {
  const env = options.env ?? process.env;
  const setting = options.setting;
  const clock = options.clock ?? monotonic;
  const files = options.files ?? nodeFiles;
  const refreshMs = options.refreshMs ?? SECRET_REFRESH_MS;
  const maxAgeMs = options.maxAgeMs ?? SECRET_MAX_AGE_MS;
  const checkTimeoutMs = options.checkTimeoutMs ?? CHECK_TIMEOUT_MS;
  /** File-backed references only; `env:` ones map to null. */
  const states = new Map<string, State | null>();

  const stateOf = (ref: string): State | null => {
    let state = states.get(ref);
    if (state === undefined) {
      const scheme = parseSecretRef(ref)?.scheme;
      state = scheme === 'env' ? null : { ref, scheme: scheme ?? 'file', confirmedAt: Number.NEGATIVE_INFINITY, generation: 0 };
      states.set(ref, state);
    }
    return state;
  };

  const failed = (err: unknown, scheme: 'file' | 'systemd'): Outcome => ({
    kind: 'failed',
    error: err instanceof AppError ? err : secretFileUnreadable(scheme, err, setting),
  });

  /** One look at the file: its outcome, and its signature when the material may be trusted until the file changes. */
  const examine = async (state: State): Promise<{ outcome: Outcome; signature?: string }> => {
    let path: string;
    let scheme: 'file' | 'systemd';
    try {
      const target = secretTarget(state.ref, env, setting);
      if (target.scheme === 'env') return { outcome: { kind: 'material', material: secretMaterial('env', target.text, setting) } };
      ({ path, scheme } = target);
    } catch (err) {
      return { outcome: failed(err, 'file') };
    }
    try {
      const before = await files.stat(path);
      const signature = `${before.dev}:${before.ino}:${before.size}:${before.mtimeNs}:${before.ctimeNs}`;
      const held = state.outcome;
      if (signature === state.signature && held?.kind === 'material') return { outcome: held, signature };
      const text = await files.readFile(path);
      const material = secretMaterial(scheme, text, setting);
      // Unchanged content keeps its string, so what is derived from it (a parsed key ring) is found by identity.
      const outcome: Outcome = held?.kind === 'material' && held.material === material ? held : { kind: 'material', material };
      const racy = Math.abs(Date.now() - Number(before.mtimeMs)) < RACY_MS;
      return racy ? { outcome } : { outcome, signature };
    } catch (err) {
      return { outcome: failed(err, scheme) };
    }
  };

  const check = (state: State): Promise<void> => {
    if (state.inflight !== undefined) return state.inflight;
    const startedAt = clock.now();
    const generation = state.generation;
    const settle = (outcome: Outcome, signature?: string): void => {
      if (state.generation !== generation) return;
      state.generation += 1;
      state.outcome = outcome;
      state.signature = signature;
      state.confirmedAt = startedAt;
      state.inflight = undefined;
    };
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        settle(failed(new Error('the file did not answer in time'), state.scheme));
        resolve();
      }, checkTimeoutMs);
      timer.unref();
    });
    const looked = examine(state).then(({ outcome, signature }) => {
      clearTimeout(timer);
      settle(outcome, signature);
    });
    state.inflight = Promise.race([looked, timedOut]);
    return state.inflight;
  };

  /**
   * Waits until a check that started after `since` has settled. The check in
   * flight may have started before it (a slow file system), and then its
   * answer may predate a rotation: one more check follows. The clock is
   * monotonic, so a check started now always qualifies.
   */
  const confirmedAfter = async (state: State, since: number, checking: Promise<void>): Promise<void> => {
    await checking;
    while (state.confirmedAt <= since) await check(state);
  };

  const notYetRead = (): AppError =>
    new AppError('E_CONFIG_SECRET_UNREADABLE', {
      message: `${setting === undefined ? 'a secret reference' : `the secret reference of ${setting}`} has not been read yet`,
      details: setting === undefined ? {} : { setting },
    });

  return {
    fresh(refs) {
      const now = clock.now();
      let waits: Promise<void>[] | undefined;
      for (const ref of refs) {
        const state = stateOf(ref);
        if (state === null) continue;
        const age = now - state.confirmedAt;
        if (age < refreshMs) continue;
        const checking = check(state);
        if (age >= maxAgeMs) {
          waits ??= [];
          waits.push(confirmedAfter(state, now - maxAgeMs, checking));
        }
      }
      return waits === undefined ? RESOLVED : Promise.all(waits).then(() => undefined);
    },
    read(ref) {
      const state = stateOf(ref);
      if (state === null) {
        const target = secretTarget(ref, env, setting);
        return secretMaterial('env', target.scheme === 'env' ? target.text : '', setting);
      }
      if (clock.now() - state.confirmedAt >= refreshMs) void check(state);
      const outcome = state.outcome;
      if (outcome === undefined) throw notYetRead();
      if (outcome.kind === 'failed') throw outcome.error;
      return outcome.material;
    },
    warm(refs) {
      for (const ref of refs) {
        const state = stateOf(ref);
        if (state !== null && state.outcome === undefined) void check(state);
      }
    },
  };
}
