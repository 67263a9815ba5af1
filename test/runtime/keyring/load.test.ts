import t from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { newKeyRing, rotateKeyRing, seal, unseal } from '../../../runtime/keyring/keyring.ts';
import { loadKeyRing } from '../../../runtime/keyring/load.ts';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.code : 'not an AppError';
  }
  return undefined;
}

t.test('no text, or blank text, is a missing key ring', async (t) => {
  t.equal(
    code(() => loadKeyRing(undefined)),
    'E_KEYRING_MISSING',
  );
  t.equal(
    code(() => loadKeyRing('  \n')),
    'E_KEYRING_MISSING',
  );
  t.equal(
    code(() => loadKeyRing('{}')),
    'E_KEYRING_INVALID',
  );
});

t.test('an unchanged file gives back the same ring; a rotated one a new ring that still opens old values', async (t) => {
  const text = newKeyRing();
  const ring = loadKeyRing(text);
  t.equal(loadKeyRing(`${text}`), ring, 'same text, same ring');
  const sealed = seal(ring, 'token-sealing', 'value');
  const rotated = loadKeyRing(rotateKeyRing(text));
  t.not(rotated, ring);
  t.equal(unseal(rotated, 'token-sealing', sealed).toString(), 'value');
});
