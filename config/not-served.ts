/**
 * What this build does not serve yet, as one table. Two kinds of rows:
 * - `no-effect`: the setting is accepted (and validated) but nothing reads
 *   it. When the configuration writes it, startup logs one warning and
 *   `check-config` prints one (code `not-served`), never a line saying it
 *   is on;
 * - `refused`: a value the build cannot serve; startup and `check-config`
 *   refuse it with the same message (exit 78).
 *
 * Read by the posture (`config/posture.ts`), by the startup checks
 * (`service/startup-config.ts`) and by the docs generator (`config/docs.ts`), which
 * marks every row's setting "not served yet". The issue that serves a
 * setting removes its row here, and with it the warning, refusal and mark.
 */
import { type Problem, problem } from './problem.ts';
import type { Config } from './schema.ts';

export type NoEffect = {
  readonly kind: 'no-effect';
  /** The setting, written as the docs write paths: a section, or `Accounts:[]:Smtp` (`[]`: any element of the list). */
  readonly setting: string;
  /** What does not happen, completing "has no effect in this release: …". */
  readonly consequence: string;
};

export type Refused = {
  readonly kind: 'refused';
  readonly setting: string;
  /** Whether the configuration asks for what is not served. */
  readonly refuses: (config: Config) => boolean;
  /** The refusal, after `<setting>: `. */
  readonly message: string;
  /** When startup refuses, for the docs. */
  readonly when: string;
  /** Settings that matter only under the refused value, marked in the docs too, and why. */
  readonly covers: readonly string[];
  readonly coversWhy: string;
};

export type NotServed = NoEffect | Refused;

export const NOT_SERVED: readonly NotServed[] = [{ kind: 'no-effect', setting: 'Accounts:[]:Owner', consequence: 'the label is shown nowhere' }];

export const NO_EFFECT: readonly NoEffect[] = NOT_SERVED.filter((row): row is NoEffect => row.kind === 'no-effect');

/** Whether `tree` (the configuration as written) holds the setting; `[]` matches any element of a list. */
function holds(tree: unknown, segments: readonly string[]): boolean {
  const [head, ...rest] = segments;
  if (head === undefined) return true;
  if (head === '[]') return Array.isArray(tree) && tree.some((element) => holds(element, rest));
  if (tree === null || typeof tree !== 'object' || Array.isArray(tree) || !Object.hasOwn(tree, head)) return false;
  return holds((tree as Record<string, unknown>)[head], rest);
}

/** The no-effect rows whose setting the configuration writes, given as written (file plus overrides, before defaults). */
export function writtenWithoutEffect(written: unknown): NoEffect[] {
  return NO_EFFECT.filter((row) => holds(written, row.setting.split(':')));
}

/** The refusals of what the build does not serve, in table order. */
export function notServedProblems(config: Config): Problem[] {
  return NOT_SERVED.flatMap((row) => (row.kind === 'refused' && row.refuses(config) ? [problem(row.setting, row.message)] : []));
}
