/**
 * Reading parsed command-line options (mri through sade): every value option
 * is declared a string, so `--account 007` stays text; an option given twice
 * or without its value is a usage error (exit 2), never a silent guess.
 */
import { usage } from './failure.ts';

export type Options = Readonly<Record<string, unknown>> & { readonly _: readonly string[] };

export function optionalText(options: Options, name: string): string | undefined {
  const value = options[name];
  if (value === undefined || value === false) return undefined;
  if (Array.isArray(value)) throw usage(`--${name} is given more than once; give it once.`);
  if (typeof value !== 'string' || value.trim() === '') throw usage(`--${name} needs a value.`);
  return value;
}

export function requiredText(options: Options, name: string, what: string): string {
  const value = optionalText(options, name);
  if (value === undefined) throw usage(`--${name} <${what}> is required.`);
  return value;
}

export function flag(options: Options, name: string): boolean {
  const value = options[name];
  if (Array.isArray(value)) return value.every((v) => v === true);
  if (value === undefined || value === false) return false;
  if (value === true) return true;
  throw usage(`--${name} takes no value.`);
}

export function optionalInteger(options: Options, name: string, min: number, max: number): number | undefined {
  const text = optionalText(options, name);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) throw usage(`--${name} takes a whole number from ${min} to ${max}.`);
  return Number(text);
}

/** The value options of every command, read as strings (sade's parser would turn digits into numbers). */
export const STRING_OPTIONS = [
  'endpoint',
  'output',
  'name',
  'mode',
  'private-key',
  'client-id',
  'redirect-uri',
  'issuer',
  'account',
  'folder',
  'type',
  'page-size',
  'cursor',
  'job',
  'stage',
  'message',
  'id',
  'address',
  'preferred',
  'note',
  'origin',
  'interval',
  'from',
  'before',
] as const;
export const BOOLEAN_OPTIONS = [
  'yes',
  'allow-clear-text',
  'trust-untrusted-certificate',
  'despite-refusal',
  'clear-note',
  'watch',
  'profiles',
  'apply',
] as const;
