/**
 * `DataEncryption`: the key ring sealing stored tokens and signing
 * attachment capabilities. Without it no refresh token can be stored and no
 * attachment link is issued. The ring's format is `runtime/keyring`'s.
 */
import { z } from 'zod';
import { secretRef } from './secret-ref.ts';

export const DataEncryption = z
  .strictObject({
    KeyRing: secretRef('The key ring, by reference; absent: nothing is sealed and no link is issued').optional(),
  })
  .meta({ description: 'Data-encryption key ring' });
