/**
 * A configuration problem: the setting it concerns, written in the spec's
 * `Section:Key:0:Sub` form, and a sentence saying what is wrong.
 *
 * Every refusal of `loadConfig` is a list of these, printed one per line.
 * A message names settings, ranges and non-secret values only; it never
 * carries what a secret reference points at, nor any material.
 *
 * Imported by the rest of `config/` only.
 */

export type Problem = { readonly setting: string; readonly message: string };

/** Path segments as zod reports them, joined the way the spec writes a setting. */
export function settingPath(path: readonly PropertyKey[]): string {
  return path.map((segment) => String(segment)).join(':');
}

export function problem(path: readonly PropertyKey[] | string, message: string): Problem {
  return { setting: typeof path === 'string' ? path : settingPath(path), message };
}

export function formatProblem(p: Problem): string {
  return p.setting === '' ? p.message : `${p.setting}: ${p.message}`;
}
