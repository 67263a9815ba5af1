import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';
import t from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { newKeyRing, parseKeyRing, purposeKey, purposes, rotateKeyRing, seal, unseal } from '../../../runtime/keyring/keyring.ts';

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

/** Replace one dot-separated part of a sealed value. */
function withPart(sealed: string, index: number, change: (part: string) => string): string {
  const parts = sealed.split('.');
  parts[index] = change(parts[index] ?? '');
  return parts.join('.');
}

function flipFirstChar(part: string): string {
  return (part[0] === 'A' ? 'B' : 'A') + part.slice(1);
}

const text = newKeyRing();
const ring = parseKeyRing(text);
const secret = 'refresh-token-1//0gVERYsecretVALUE';

t.test('a new ring holds one 256-bit active key', async (t) => {
  const file = JSON.parse(text) as { format: string; version: number; activeKeyId: string; keys: Array<{ id: string; created: string; key: string }> };
  t.equal(file.format, 'mailcairn-keyring');
  t.equal(file.version, 1);
  t.equal(file.keys.length, 1);
  t.equal(file.activeKeyId, file.keys[0]?.id);
  t.equal(Buffer.from(file.keys[0]?.key ?? '', 'base64').length, 32);
  t.same(ring.keyIds, [file.activeKeyId]);
  t.not(newKeyRing(), text, 'every ring is fresh');
});

t.test('seal and unseal round-trip, with and without additional data', async (t) => {
  const sealed = seal(ring, 'token-sealing', secret);
  t.match(sealed, new RegExp(`^mc1\\.${ring.activeKeyId}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+$`), 'the key id sits beside the ciphertext');
  t.notMatch(sealed, secret);
  t.equal(unseal(ring, 'token-sealing', sealed).toString('utf8'), secret);
  t.not(seal(ring, 'token-sealing', secret), sealed, 'a fresh IV each time');

  const bytes = Buffer.from([0, 1, 2, 255]);
  t.same(unseal(ring, 'token-sealing', seal(ring, 'token-sealing', bytes, 'account:alice'), 'account:alice'), bytes);
  t.same(unseal(ring, 'token-sealing', seal(ring, 'token-sealing', '')), Buffer.alloc(0), 'empty plaintext');
});

t.test('tampering is refused: ciphertext, tag, iv, key id, additional data, purpose', async (t) => {
  const sealed = seal(ring, 'token-sealing', secret, 'account:alice');
  const cases: Array<[string, () => unknown]> = [
    ['altered ciphertext', () => unseal(ring, 'token-sealing', withPart(sealed, 3, flipFirstChar), 'account:alice')],
    [
      'altered tag',
      () =>
        unseal(
          ring,
          'token-sealing',
          withPart(sealed, 3, (p) => p.slice(0, -2) + (p.endsWith('AA') ? 'BA' : 'AA')),
          'account:alice',
        ),
    ],
    [
      'truncated',
      () =>
        unseal(
          ring,
          'token-sealing',
          withPart(sealed, 3, (p) => p.slice(0, 10)),
          'account:alice',
        ),
    ],
    ['altered iv', () => unseal(ring, 'token-sealing', withPart(sealed, 2, flipFirstChar), 'account:alice')],
    ['other record', () => unseal(ring, 'token-sealing', sealed, 'account:bob')],
    ['no additional data', () => unseal(ring, 'token-sealing', sealed)],
    ['other purpose', () => unseal(ring, 'capability-signing', sealed, 'account:alice')],
    ['not the format', () => unseal(ring, 'token-sealing', 'plain text', 'account:alice')],
    [
      'another version',
      () =>
        unseal(
          ring,
          'token-sealing',
          withPart(sealed, 0, () => 'mc2'),
          'account:alice',
        ),
    ],
    [
      'bad base64url',
      () =>
        unseal(
          ring,
          'token-sealing',
          withPart(sealed, 3, (p) => `${p}+/`),
          'account:alice',
        ),
    ],
  ];
  for (const [name, attempt] of cases) {
    const err = refusal(attempt);
    t.equal(err.code, 'E_KEYRING_TAMPERED', name);
    t.notMatch(err.message, secret, `${name}: no plaintext in the message`);
  }
});

t.test('a key id the ring does not hold is refused as unknown, even one moved onto the value', async (t) => {
  const other = parseKeyRing(newKeyRing());
  const sealed = seal(other, 'token-sealing', secret);
  const err = refusal(() => unseal(ring, 'token-sealing', sealed));
  t.equal(err.code, 'E_KEYRING_UNKNOWN_KEY');
  t.match(err.message, other.activeKeyId, 'names the key id (not secret)');
  t.match(err.message, 'DataEncryption:KeyRing');

  const swapped = withPart(seal(ring, 'token-sealing', secret), 1, () => other.activeKeyId);
  t.equal(refusal(() => unseal(ring, 'token-sealing', swapped)).code, 'E_KEYRING_UNKNOWN_KEY');
});

t.test('the wrong key is refused as tampered (same id, other material)', async (t) => {
  const file = JSON.parse(text) as { keys: Array<{ key: string }> };
  const impostor = JSON.parse(newKeyRing()) as { keys: Array<{ key: string }> };
  const first = file.keys[0];
  const replacement = impostor.keys[0];
  if (first === undefined || replacement === undefined) throw new Error('rings hold a key');
  first.key = replacement.key;
  const wrong = parseKeyRing(JSON.stringify(file));
  t.equal(refusal(() => unseal(wrong, 'token-sealing', seal(ring, 'token-sealing', secret))).code, 'E_KEYRING_TAMPERED');
});

t.test('rotation: new values use the new key, old values still open', async (t) => {
  const old = seal(ring, 'token-sealing', secret);
  const rotatedText = rotateKeyRing(text);
  const rotated = parseKeyRing(rotatedText);
  t.equal(rotated.keyIds.length, 2);
  t.equal(rotated.keyIds[0], ring.activeKeyId, 'the old key is kept');
  t.not(rotated.activeKeyId, ring.activeKeyId, 'a new key is active');
  t.equal(unseal(rotated, 'token-sealing', old).toString(), secret);
  const fresh = seal(rotated, 'token-sealing', secret);
  t.equal(fresh.split('.')[1], rotated.activeKeyId);
  t.equal(refusal(() => unseal(ring, 'token-sealing', fresh)).code, 'E_KEYRING_UNKNOWN_KEY', 'the old ring cannot read the new key');
});

t.test('purpose keys: distinct per purpose and per key, stable, usable for HMAC', async (t) => {
  t.same([...purposes], ['token-sealing', 'capability-signing']);
  const signing = purposeKey(ring, 'capability-signing');
  t.equal(signing.keyId, ring.activeKeyId);
  t.equal(signing.key.length, 32);
  t.same(purposeKey(ring, 'capability-signing').key, signing.key, 'stable');
  t.notSame(purposeKey(ring, 'token-sealing').key, signing.key, 'separate per purpose');
  const file = JSON.parse(text) as { keys: Array<{ key: string }> };
  t.notSame(signing.key, Buffer.from(file.keys[0]?.key ?? '', 'base64'), 'never the ring key itself');
  signing.key.fill(0);
  t.notSame(purposeKey(ring, 'capability-signing').key, signing.key, 'callers get a copy');

  const rotated = parseKeyRing(rotateKeyRing(text));
  const tag = createHmac('sha256', purposeKey(ring, 'capability-signing').key).update('capability').digest('hex');
  t.equal(
    createHmac('sha256', purposeKey(rotated, 'capability-signing', ring.activeKeyId).key)
      .update('capability')
      .digest('hex'),
    tag,
    'an older key verifies what it signed',
  );
  t.equal(refusal(() => purposeKey(ring, 'capability-signing', 'nope')).code, 'E_KEYRING_UNKNOWN_KEY');
});

t.test('a ring shows no key material when logged or serialised', async (t) => {
  const material = (JSON.parse(text) as { keys: Array<{ key: string }> }).keys[0]?.key ?? 'missing';
  t.notMatch(JSON.stringify(ring), material);
  t.notMatch(inspect(ring, { showHidden: true, depth: 10 }), material);
  t.ok(Object.isFrozen(ring));
});

t.test('malformed rings are refused without echoing their content', async (t) => {
  const good = JSON.parse(text) as Record<string, unknown> & { keys: Array<Record<string, unknown>> };
  const key = good.keys[0] ?? {};
  const variants: Array<[string, string, RegExp]> = [
    ['not JSON', `{"keys": "${String(key.key)}"`, /is not JSON/],
    ['an array', '[]', /is not a JSON object/],
    ['wrong format', JSON.stringify({ ...good, format: 'other' }), /"format" must be "mailcairn-keyring"/],
    ['future version', JSON.stringify({ ...good, version: 2 }), /"version" this build cannot read/],
    ['no keys', JSON.stringify({ ...good, keys: [] }), /at least one key/],
    ['unknown member', JSON.stringify({ ...good, extra: 1 }), /unknown members \(extra\)/],
    [
      'short key',
      JSON.stringify({ ...good, keys: [{ ...key, key: Buffer.alloc(16).toString('base64') }] }),
      /keys\[0\]\.key must be the base64 of exactly 32 bytes/,
    ],
    ['bad id', JSON.stringify({ ...good, keys: [{ ...key, id: 'a.b' }] }), /keys\[0\]\.id must be/],
    ['bad created', JSON.stringify({ ...good, keys: [{ ...key, created: 'yesterday' }] }), /keys\[0\]\.created must be an ISO 8601 instant/],
    ['duplicate id', JSON.stringify({ ...good, keys: [key, key] }), /holds key id .* twice/],
    ['active key missing', JSON.stringify({ ...good, activeKeyId: 'gone' }), /"activeKeyId" names no key/],
  ];
  for (const [name, body, message] of variants) {
    const err = refusal(() => parseKeyRing(body));
    t.equal(err.code, 'E_KEYRING_INVALID', name);
    t.match(err.message, message, name);
    t.match(err.message, 'DataEncryption:KeyRing', name);
    t.notMatch(err.message, String(key.key), `${name}: no key material in the message`);
  }
  t.equal(refusal(() => rotateKeyRing('{')).code, 'E_KEYRING_INVALID', 'rotation refuses a malformed ring too');
});
