/**
 * Turning zod issues into problems an operator can act on: the setting in
 * `Section:Key:0:Sub` form and a sentence. Unknown keys are named one by
 * one, with the likely intended key when one is close; a missing value says
 * it is required; a value of the wrong kind says which kind is expected.
 * Messages are built from the schema, never from the value written.
 */
import type { z } from 'zod';
import { keysAt } from './schema-walk.ts';
import { type Problem, problem } from './problem.ts';

const KINDS: Record<string, string> = {
  string: 'must be text',
  number: 'must be a number',
  int: 'must be a whole number',
  boolean: 'must be true or false',
  array: 'must be a list',
  object: 'must be an object of settings',
};

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let current = raw;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const saved = row[j] ?? 0;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, previous + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1));
      previous = saved;
    }
  }
  return row[b.length] ?? 0;
}

/** The known key an unknown one most likely meant, if any is close. */
export function suggestion(unknown: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(unknown.length / 4)) + 1;
  for (const key of known) {
    const d = distance(unknown, key);
    if (d < bestDistance) {
      best = key;
      bestDistance = d;
    }
  }
  return best;
}

export function problemsFromIssues(issues: readonly z.core.$ZodIssue[], raw: unknown, root: z.core.$ZodType): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(root, issue.path);
      for (const key of issue.keys) {
        const near = suggestion(key, known);
        const what = issue.path.length === 0 ? 'unknown section' : 'unknown setting';
        problems.push(problem([...issue.path, key], near === null ? what : `${what} (did you mean ${near}?)`));
      }
    } else if (issue.code === 'invalid_type') {
      const missing = valueAt(raw, issue.path) === undefined;
      // A helper's own message (a span says how to write one) beats zod's generic one.
      const generic = issue.message.startsWith('Invalid input');
      problems.push(problem(issue.path, missing ? 'is required' : generic ? (KINDS[issue.expected] ?? 'has the wrong kind of value') : issue.message));
    } else if (issue.code === 'invalid_value' && valueAt(raw, issue.path) === undefined) {
      problems.push(problem(issue.path, `is required (one of ${issue.values.map(String).join(', ')})`));
    } else {
      problems.push(problem(issue.path, issue.message));
    }
  }
  return problems;
}
