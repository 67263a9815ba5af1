/**
 * The shape of a secret reference: `file:/absolute/path`, `env:NAME` or
 * `systemd:NAME` (a credential in `$CREDENTIALS_DIRECTORY`). Every place that
 * takes credential material takes a reference, never the material: a value
 * without a scheme is refused as an inline secret, and the message never
 * repeats what was written.
 *
 * Parsing and reading the material is `runtime/secret-ref.ts`; this file only
 * builds the configuration schema of a reference.
 */
import { z } from 'zod';
import { parseSecretRef } from '../../runtime/secret-ref.ts';

const MESSAGE = 'must be a secret reference (file:/absolute/path, env:NAME or systemd:NAME); the material itself is never written in configuration';

export function secretRef(description: string) {
  return z
    .string({ error: MESSAGE })
    .refine((value) => parseSecretRef(value) !== null, { error: MESSAGE })
    .meta({ description, type: 'secret reference' });
}

export const SecretRef = secretRef('A reference to secret material, read at each use');
