/**
 * The material behind secret references, held in memory and read
 * asynchronously, so that no file is read synchronously on the request path
 * (issue 11: before, every request read every key file synchronously on the
 * main thread) while every request still sees the material as of its own
 * arrival (docs/security.md "Credential entries": replacing the file rotates
 * the key from the next request): a rotated key takes effect on the very next
 * request, no restart.
 *
 * Freshness. `fresh(refs)` is what a request awaits before judging a
 * credential. It resolves once, for every ref, the material held is known to
 * be the file as it was at or after the call, so a rewrite completed before
 * the request arrived is always seen:
 * - fast path, the steady state: a stat taken now (`statNow`, synchronous:
 *   metadata from the inode cache, about 2 µs) matches the signature of the
 *   file the material was read from. Nothing is read and nothing awaited.
 *   Measured (bench auth-overhead): an asynchronous stat per request and file
 *   cost 6–13 µs of main-thread time each, more than the synchronous reads
 *   it replaced; the synchronous stat costs a fraction of either.
 * - otherwise (the file changed, is racy, vanished, or was never read) the
 *   call waits for an asynchronous check that started at or after it.
 *   Checks are shared, per reference:
 * - none running: the call starts one and waits for it;
 * - one running: it started before this request and may have looked before
 *   a rewrite the request must see, so the call waits for the next check,
 *   queued to start the moment the running one settles. Every request that
 *   arrives meanwhile joins that same queued check.
 * So at most one check runs and one waits per file: under load the stats per
 * second per file are bounded by how long a stat takes, not by the request
 * rate, and a burst of concurrent requests costs one or two stats.
 * `read(ref)` answers from memory with no I/O (the outcome of the last check
 * that finished), for the judging that follows `fresh` and for callers that
 * cannot wait (link issuing), which call `refresh(refs)` to start a check in
 * the background so that the next `read` is recent.
 *
 * Check. A file reference (`file:`, `systemd:`) is `stat`ed asynchronously,
 * and read (asynchronously) only when the file's identity or
 * modification changed (device, inode, size, mtime and ctime, in ns) or its
 * mtime lies within `RACY_MS` of the last read: a same-size rewrite inside
 * the file system's timestamp granularity would otherwise look unchanged
 * (git's "racily clean" entries). A check that has not answered after
 * `checkTimeoutMs` (5 s) counts as failed; its late answer changes nothing,
 * and the queued check starts then. An `env:` reference is looked up at each
 * use, in memory, as before.
 *
 * Failure. A check that fails (the file vanished, became unreadable, is a
 * directory, or is empty) replaces the material: the old material is
 * dropped, so a deleted key stops working on the next request, and `read`
 * throws E_CONFIG_SECRET_UNREADABLE (scheme and setting, never the path)
 * until a later check reads the file again. Logging is the caller's:
 * authenticate.ts names the entry at error on each refused use.
 *
 * Importable from http/ (the authentication stages, attachment links).
 */
import { statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { AppError } from './errors.ts';
import { parseSecretRef, secretFileUnreadable, secretMaterial, secretTarget } from './secret-ref.ts';

const CHECK_TIMEOUT_MS = 5_000;
/** A file modified this close to when it was read is read again at the next check. */
const RACY_MS = 2_000;

export type SecretCache = {
  /**
   * Resolves once, for every ref, a check that started at or after this call
   * has finished (shared with concurrent calls; a stat, and a read only when
   * the file changed). Never rejects: a failed check shows in `read`.
   */
  fresh(refs: readonly string[]): Promise<void>;
  /**
   * The material as of the last check that finished, from memory (no I/O).
   * @throws AppError E_CONFIG_SECRET_UNREADABLE: the last check failed, or none has finished yet.
   */
  read(ref: string): string;
  /** Start a check of each ref in the background unless one is running or queued; never waits. At startup, and before a `read` that cannot wait. */
  refresh(refs: readonly string[]): void;
};

type FileStat = { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint; mtimeMs: bigint };

/** What a check needs of the file system; node:fs by default (tests count the calls). */
export type SecretFiles = {
  stat(path: string): Promise<FileStat>;
  readFile(path: string): Promise<string>;
  /**
   * The fast path of `fresh`: a stat at the request's arrival, answered from
   * the inode cache (about 2 µs, against 6–13 µs of main-thread time for a
   * trip through the thread pool). Undefined: the file is not there. Without
   * it every `fresh` waits for an asynchronous check.
   */
  statNow?(path: string): FileStat | undefined;
};

export type SecretCacheOptions = {
  env?: NodeJS.ProcessEnv;
  /** Named in failures (`McpEndpoint:Authentication`), never the path. */
  setting?: string;
  files?: SecretFiles;
  checkTimeoutMs?: number;
};

const nodeFiles: SecretFiles = {
  stat: (path) => stat(path, { bigint: true }),
  readFile: (path) => readFile(path, 'utf8'),
  statNow: (path) => statSync(path, { bigint: true, throwIfNoEntry: false }),
};

const signatureOf = (s: FileStat): string => `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;

type Outcome = { kind: 'material'; material: string } | { kind: 'failed'; error: AppError };

/** One check of one file: settled when its outcome is in `State` (or it timed out). */
type Check = { readonly done: Promise<void>; readonly settled: () => void };

type State = {
  readonly ref: string;
  /** Named in a failure the file system gives no reason for (a timeout). */
  readonly scheme: 'file' | 'systemd';
  /** Undefined until the first check finishes. */
  outcome?: Outcome;
  /** Where the reference points, resolved at the first fast-path look (a `systemd:` one through `$CREDENTIALS_DIRECTORY`); null when it cannot be resolved. */
  path?: string | null;
  /** The file `outcome`'s material was read from, unless it may have changed unseen since (racy). */
  signature?: string;
  /** The check in flight; only its answer is taken (a timed-out one answering late changes nothing). */
  running?: Check;
  /** The check that starts when `running` settles, shared by every caller that arrived while it ran. */
  queued?: Check;
};

const RESOLVED: Promise<void> = Promise.resolve();

function newCheck(): Check {
  let settled!: () => void;
  const done = new Promise<void>((resolve) => {
    settled = resolve;
  });
  return { done, settled };
}

export function createSecretCache(options: SecretCacheOptions = {}): SecretCache {
  const env = options.env ?? process.env;
  const setting = options.setting;
  const files = options.files ?? nodeFiles;
  const checkTimeoutMs = options.checkTimeoutMs ?? CHECK_TIMEOUT_MS;
  /** File-backed references only; `env:` ones map to null. */
  const states = new Map<string, State | null>();

  const stateOf = (ref: string): State | null => {
    let state = states.get(ref);
    if (state === undefined) {
      const scheme = parseSecretRef(ref)?.scheme;
      state = scheme === 'env' ? null : { ref, scheme: scheme ?? 'file' };
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
      const signature = signatureOf(before);
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

  /** Run `check` now: it becomes `running`; when it settles, the queued check (if any) starts at once. */
  const start = (state: State, check: Check): void => {
    state.running = check;
    const settle = (outcome: Outcome, signature?: string): void => {
      if (state.running !== check) return;
      clearTimeout(timer);
      state.outcome = outcome;
      state.signature = signature;
      state.running = undefined;
      const next = state.queued;
      state.queued = undefined;
      if (next !== undefined) start(state, next);
      check.settled();
    };
    const timer = setTimeout(() => settle(failed(new Error('the file did not answer in time'), state.scheme)), checkTimeoutMs);
    timer.unref();
    examine(state).then(
      ({ outcome, signature }) => settle(outcome, signature),
      (err: unknown) => settle(failed(err, state.scheme)),
    );
  };

  /**
   * True when the material held is the file as it is now: a stat taken now
   * has the signature of the file the material was read from. No check is
   * needed then, and none is waited for.
   */
  const unchangedNow = (state: State): boolean => {
    if (files.statNow === undefined || state.signature === undefined || state.outcome?.kind !== 'material') return false;
    if (state.path === undefined) {
      try {
        const target = secretTarget(state.ref, env, setting);
        state.path = target.scheme === 'env' ? null : target.path;
      } catch {
        state.path = null;
      }
    }
    const path = state.path;
    if (path === null) return false;
    try {
      const now = files.statNow(path);
      return now !== undefined && signatureOf(now) === state.signature;
    } catch {
      return false; // the asynchronous check says what is wrong
    }
  };

  /** A check that starts now or later: the one started now when none runs, else the queued one (shared). */
  const checkFromNow = (state: State): Promise<void> => {
    if (state.running === undefined) {
      const check = newCheck();
      start(state, check);
      return check.done;
    }
    state.queued ??= newCheck();
    return state.queued.done;
  };

  const notYetRead = (): AppError =>
    new AppError('E_CONFIG_SECRET_UNREADABLE', {
      message: `${setting === undefined ? 'a secret reference' : `the secret reference of ${setting}`} has not been read yet`,
      details: setting === undefined ? {} : { setting },
    });

  return {
    fresh(refs) {
      if (refs.length === 1) {
        const state = stateOf(refs[0]!);
        return state === null || unchangedNow(state) ? RESOLVED : checkFromNow(state);
      }
      let waits: Map<State, Promise<void>> | undefined;
      for (const ref of refs) {
        const state = stateOf(ref);
        // One check per file even when two entries name it: the second would otherwise queue behind the first.
        if (state === null || waits?.has(state) || unchangedNow(state)) continue;
        waits ??= new Map();
        waits.set(state, checkFromNow(state));
      }
      if (waits === undefined) return RESOLVED;
      if (waits.size === 1) return waits.values().next().value!;
      return Promise.all(waits.values()).then(() => undefined);
    },
    read(ref) {
      const state = stateOf(ref);
      if (state === null) {
        const target = secretTarget(ref, env, setting);
        return secretMaterial('env', target.scheme === 'env' ? target.text : '', setting);
      }
      const outcome = state.outcome;
      if (outcome === undefined) throw notYetRead();
      if (outcome.kind === 'failed') throw outcome.error;
      return outcome.material;
    },
    refresh(refs) {
      for (const ref of refs) {
        const state = stateOf(ref);
        if (state !== null && state.running === undefined && state.queued === undefined) start(state, newCheck());
      }
    },
  };
}
