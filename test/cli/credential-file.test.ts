/**
 * The credential file on its own: an absent file reads as no profile; a
 * sealed secret opens only under the profile and endpoint it was sealed for
 * and with the key beside it; a damaged file or tag is refused; modes are
 * owner-only; unknown members written by a later client survive a write.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CREDENTIAL_FILE, KEY_FILE, readCredentialFile, seal, unseal, writeCredentialFile } from '../../cli/credential-file.ts';
import { tempDir } from '../helpers/daemon.ts';

t.test('sealing binds the profile and the endpoint', async (t) => {
  const dir = join(tempDir(t), 'mailcairn');
  const binding = { profile: 'prod', endpoint: 'https://admin.example.org' };
  const sealed = seal(dir, 'mc_secret-value', binding);
  t.notMatch(sealed, /secret-value/);
  t.equal(unseal(dir, sealed, binding), 'mc_secret-value');
  t.throws(() => unseal(dir, sealed, { ...binding, endpoint: 'https://elsewhere.example.org' }), /cannot be opened/, 'another endpoint');
  t.throws(() => unseal(dir, sealed, { ...binding, profile: 'other' }), /cannot be opened/, 'another profile');
  const parts = sealed.split('.');
  t.throws(() => unseal(dir, [...parts.slice(0, 3), parts[3]!.slice(0, 8)].join('.'), binding), /cannot be opened/, 'a shortened tag');
  t.not(seal(dir, 'mc_secret-value', binding), sealed, 'a fresh nonce each time');
  if (process.platform !== 'win32') {
    t.equal(statSync(dir).mode & 0o777, 0o700);
    t.equal(statSync(join(dir, KEY_FILE)).mode & 0o777, 0o600);
  }
  rmSync(join(dir, KEY_FILE));
  t.throws(() => unseal(dir, sealed, binding), /key file .* is missing/, 'no key, no secret');
});

t.test('the document', async (t) => {
  const dir = join(tempDir(t), 'mailcairn');
  t.same(readCredentialFile(dir), { format: 1, current: null, profiles: {} }, 'absent: no profile');
  writeCredentialFile(dir, {
    format: 1,
    current: 'a',
    profiles: {
      a: { endpoint: 'https://a.example', mode: 'key', sealedKey: 'v1.x.y.z', signedInAt: '2026-01-01T00:00:00Z', tokenEndpoint: 'https://as.example/token' },
    },
  });
  if (process.platform !== 'win32') t.equal(statSync(join(dir, CREDENTIAL_FILE)).mode & 0o777, 0o600);
  const read = readCredentialFile(dir);
  t.equal(read.profiles.a!.tokenEndpoint, 'https://as.example/token', "a later client's member is kept");
  writeCredentialFile(dir, read);
  t.match(readFileSync(join(dir, CREDENTIAL_FILE), 'utf8'), /tokenEndpoint/);
  writeFileSync(join(dir, CREDENTIAL_FILE), '{"format":1,');
  t.throws(() => readCredentialFile(dir), /is damaged; move it aside and log in again/);
});
