/**
 * Turning the text behind `DataEncryption:KeyRing` into a key ring. Pure: the
 * caller reads the secret reference (re-read at each use, so a rotated ring
 * takes effect without a restart) and hands the text here.
 *
 * The last text seen is remembered with its ring, so re-reading an unchanged
 * file costs a string comparison and keeps the derived purpose keys cached,
 * instead of a parse and fresh HKDF derivations per use.
 *
 * Importable from anywhere.
 */
import { AppError } from '../errors.ts';
import { parseKeyRing, type KeyRing } from './keyring.ts';

let last: { text: string; ring: KeyRing } | undefined;

/** `undefined` or blank text means no key ring is configured (E_KEYRING_MISSING). */
export function loadKeyRing(text: string | undefined): KeyRing {
  if (text === undefined || text.trim() === '') {
    throw new AppError('E_KEYRING_MISSING', {
      message: 'DataEncryption:KeyRing is not configured or names an empty file; create one with `mailcairnd keyring new`',
    });
  }
  if (last !== undefined && last.text === text) return last.ring;
  const ring = parseKeyRing(text);
  last = { text, ring };
  return ring;
}
