/**
 * What was thrown, named by class and code only: `TypeError`,
 * `RangeError:ERR_OUT_OF_RANGE`, `AppError:E_ACTOR_CRASHED`. Never its
 * message, which may quote a subject, an address or a body; and only names
 * that are plain tokens, so a class or code built from input cannot carry
 * it either. The class is the constructor's name (code), not `err.name`
 * (a writable string).
 *
 * Importable from anywhere: the logger reduces every error it is given with
 * it (log-error.ts), and the mime-parse task names a parser failure by it.
 */

export type ErrorClass = {
  /** Constructor name, or `thrown-<typeof>` for a thrown primitive, or `unknown`. */
  readonly type: string;
  /** The error's `code`, when it is a plain token (`SQLITE_CONSTRAINT_UNIQUE`, `E_IMAP_AUTH`). */
  readonly code?: string;
};

const TOKEN = /^[A-Za-z0-9_$.-]{1,38}$/;

function token(value: unknown): string | null {
  return typeof value === 'string' && TOKEN.test(value) ? value : null;
}

export function classOf(err: unknown): ErrorClass {
  if (err === null || (typeof err !== 'object' && typeof err !== 'function')) return { type: `thrown-${typeof err}` };
  const type = token((err as { constructor?: { name?: unknown } }).constructor?.name) ?? 'unknown';
  const code = token((err as { code?: unknown }).code);
  return code === null ? { type } : { type, code };
}

/** `classOf` as one string, `Type` or `Type:CODE`. */
export function errorClass(err: unknown): string {
  const { type, code } = classOf(err);
  return code === undefined ? type : `${type}:${code}`;
}
