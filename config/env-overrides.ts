/**
 * `MAILCAIRN__Section__Key[__0__Sub]=value` environment overrides, applied
 * over the parsed file before validation.
 *
 * - Segments are matched to the schema's keys regardless of case (environment
 *   names are conventionally upper case); a segment naming no key is kept as
 *   written, so strict validation refuses it by name like a file key.
 * - A numeric segment under a list addresses an element by index; an index may
 *   extend a list by one element at a time, never leave a gap.
 * - Values are text; they become numbers or booleans where the setting takes
 *   one, and a JSON list or object literal is read where a list or object goes.
 * - An empty value removes the setting, so its default applies.
 *
 * Values are never repeated in a problem: an override may carry a reference.
 */
import type { z } from 'zod';
import { childOf, matchKey, unwrap } from './schema-walk.ts';
import { type Problem, problem } from './problem.ts';

export const ENV_PREFIX = 'MAILCAIRN__';

export type EnvSource = { readonly setting: string; readonly variable: string };
export type EnvResult = { readonly value: Record<string, unknown>; readonly problems: Problem[]; readonly sources: EnvSource[] };

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return value !== null && typeof value === 'object';
}

/** Orders variables so that index 2 is applied after index 10 is not: numbers compare as numbers. */
function compareNames(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true, sensitivity: 'variant' });
}

function coerce(text: string, schema: z.core.$ZodType | null, variable: string, problems: Problem[]): unknown {
  if (schema === null) return text;
  const kind = unwrap(schema).kind;
  if (kind === 'number' && /^[+-]?\d+(?:\.\d+)?$/.test(text)) return Number(text);
  if (kind === 'boolean' && /^(?:true|false)$/i.test(text)) return text.toLowerCase() === 'true';
  const trimmed = text.trim();
  if ((kind === 'array' && trimmed.startsWith('[')) || (kind === 'object' && trimmed.startsWith('{'))) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      problems.push(problem(variable, 'is not valid JSON'));
      return undefined;
    }
  }
  return text;
}

export function applyEnvOverrides(base: Record<string, unknown>, env: NodeJS.ProcessEnv, root: z.core.$ZodType): EnvResult {
  const value: Record<string, unknown> = structuredClone(base);
  const problems: Problem[] = [];
  const sources: EnvSource[] = [];
  const names = Object.keys(env)
    .filter((name) => name.startsWith(ENV_PREFIX))
    .sort(compareNames);

  for (const variable of names) {
    const text = env[variable] ?? '';
    const written = variable.slice(ENV_PREFIX.length).split('__');
    if (written.some((segment) => segment === '')) {
      problems.push(problem(variable, 'names no setting: write MAILCAIRN__Section__Key, with list indexes as their own segment'));
      continue;
    }
    let schema: z.core.$ZodType | null = root;
    let container: Container = value;
    const path: (string | number)[] = [];
    let failed = false;
    for (let i = 0; i < written.length; i += 1) {
      const segment = written[i] ?? '';
      const last = i === written.length - 1;
      let key: string | number;
      if (Array.isArray(container)) {
        if (!/^\d+$/.test(segment)) {
          problems.push(problem([...path], `is a list: ${variable} must address an element by index`));
          failed = true;
          break;
        }
        key = Number(segment);
        if (key > container.length) {
          problems.push(problem([...path, key], `index ${key} leaves a gap: the list has ${container.length} element(s) (set by ${variable})`));
          failed = true;
          break;
        }
      } else {
        key = schema === null ? segment : (matchKey(schema, segment) ?? segment);
      }
      path.push(key);
      schema = schema === null ? null : childOf(schema, String(key));
      if (last) {
        if (text === '') {
          if (Array.isArray(container)) {
            problems.push(problem(path, `cannot be removed by an empty ${variable}; remove the list element instead`));
            failed = true;
          } else delete container[key as string];
        } else {
          const coerced = coerce(text, schema, variable, problems);
          if (coerced === undefined) failed = true;
          else (container as Record<string | number, unknown>)[key] = coerced;
        }
        break;
      }
      const existing: unknown = (container as Record<string | number, unknown>)[key];
      const next = written[i + 1] ?? '';
      const wantsList = schema !== null ? unwrap(schema).kind === 'array' : /^\d+$/.test(next);
      if (isContainer(existing) && Array.isArray(existing) === wantsList) {
        container = existing;
      } else {
        const created: Container = wantsList ? [] : {};
        (container as Record<string | number, unknown>)[key] = created;
        container = created;
      }
    }
    if (!failed) sources.push({ setting: path.join(':'), variable });
  }
  return { value, problems, sources };
}
