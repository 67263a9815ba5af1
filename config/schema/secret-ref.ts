/**
 * The shape of a secret reference: `file:/absolute/path`, `env:NAME` or
 * `systemd:NAME` (a credential in `$CREDENTIALS_DIRECTORY`). Every place that
 * takes credential material takes a reference, never the material: a value
 * without a scheme is refused as an inline secret, and the message never
 * repeats what was written.
 *
 * Reading the material is `config/secret-ref.ts`; this file only validates.
 */
import { z } from 'zod';

export type SecretScheme = 'file' | 'env' | 'systemd';
export type ParsedSecretRef = { readonly scheme: SecretScheme; readonly target: string };

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// systemd credential names: no path separator, not '.' or '..'.
const CREDENTIAL_NAME = /^(?!\.{1,2}$)[A-Za-z0-9_.@:-]{1,255}$/;

export function parseSecretRef(ref: string): ParsedSecretRef | null {
  const colon = ref.indexOf(':');
  if (colon < 0) return null;
  const scheme = ref.slice(0, colon);
  const target = ref.slice(colon + 1);
  if (scheme === 'file') {
    if (!target.startsWith('/') || target.includes('\0') || target.length < 2) return null;
    return { scheme, target };
  }
  if (scheme === 'env') return ENV_NAME.test(target) ? { scheme, target } : null;
  if (scheme === 'systemd') return CREDENTIAL_NAME.test(target) ? { scheme, target } : null;
  return null;
}

const MESSAGE =
  'must be a secret reference (file:/absolute/path, env:NAME or systemd:NAME); the material itself is never written in configuration';

export function secretRef(description: string) {
  return z
    .string({ error: MESSAGE })
    .refine((value) => parseSecretRef(value) !== null, { error: MESSAGE })
    .meta({ description, type: 'secret reference' });
}

export const SecretRef = secretRef('A reference to secret material, read at each use');
