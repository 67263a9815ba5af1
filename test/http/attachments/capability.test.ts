/**
 * Attachment capabilities: issue and verify, every way a token can be
 * wrong, key rotation, the lifetime bounds, the link and posture helpers,
 * and the ring held in memory (parsed once per change of its file, checked
 * by every verification).
 */
import { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { createSecretCache } from '../../../runtime/secret-cache.ts';
import {
  attachmentLink,
  CAPABILITY_DEFAULT_LIFETIME_MS,
  CAPABILITY_MAX_LIFETIME_MS,
  canIssueLinks,
  createLinkKeyRing,
  issueCapability,
  verifyCapability,
} from '../../../http/attachments/capability.ts';
import { newKeyRing, parseKeyRing, purposeKey, rotateKeyRing } from '../../../runtime/keyring/keyring.ts';
import { createHmac } from 'node:crypto';
import { tempDir } from '../../helpers/daemon.ts';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const target = { messageId: 4242, index: 3, accountId: 'alice' };
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

t.test('a token round-trips its claims and expires ten minutes after issue by default', async (t) => {
  const ring = parseKeyRing(newKeyRing());
  const token = issueCapability(ring, target, { now: NOW });
  t.match(token, /^[A-Za-z0-9_-]+$/, 'URL-safe');
  t.ok(token.length < 160, `short enough for a link (${token.length})`);
  t.same(verifyCapability(ring, token, NOW), { ...target, expiresAt: NOW + CAPABILITY_DEFAULT_LIFETIME_MS, keyId: ring.activeKeyId });
  t.equal(CAPABILITY_DEFAULT_LIFETIME_MS, 600_000);
  t.equal(CAPABILITY_MAX_LIFETIME_MS, 1_800_000);
  t.not(issueCapability(ring, { ...target, index: 4 }, { now: NOW }), token, 'another attachment, another token');
  const big = { messageId: Number.MAX_SAFE_INTEGER, index: 65_535, accountId: 'a'.repeat(63) };
  t.match(verifyCapability(ring, issueCapability(ring, big, { now: NOW }), NOW), big, 'the largest values');
});

t.test('a token is valid until its expiry instant, then never again', async (t) => {
  const ring = parseKeyRing(newKeyRing());
  const token = issueCapability(ring, target, { now: NOW, lifetimeMs: 60_000 });
  t.ok(verifyCapability(ring, token, NOW + 59_999));
  t.equal(verifyCapability(ring, token, NOW + 60_000), null);
  t.equal(verifyCapability(ring, token, NOW + 86_400_000), null);
  t.equal(verifyCapability(ring, token, NOW - CAPABILITY_MAX_LIFETIME_MS), null, 'an expiry further ahead than any lifetime is refused (clock set back)');
});

t.test('any changed character or bit gives null', async (t) => {
  const ring = parseKeyRing(newKeyRing());
  const token = issueCapability(ring, target, { now: NOW });
  let accepted = 0;
  for (let i = 0; i < token.length; i++) {
    for (const c of ALPHABET) {
      if (c === token[i]) continue;
      if (verifyCapability(ring, token.slice(0, i) + c + token.slice(i + 1), NOW) !== null) accepted += 1;
    }
  }
  t.equal(accepted, 0, `no variant of ${token.length} characters verifies`);
  const bytes = Buffer.from(token, 'base64url');
  for (let i = 0; i < bytes.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const copy = Buffer.from(bytes);
      copy[i] = copy[i]! ^ (1 << bit);
      if (verifyCapability(ring, copy.toString('base64url'), NOW) !== null) accepted += 1;
    }
  }
  t.equal(accepted, 0, 'no flipped bit verifies');
});

t.test('malformed tokens give null, never an exception', async (t) => {
  const ring = parseKeyRing(newKeyRing());
  const token = issueCapability(ring, target, { now: NOW });
  const bytes = Buffer.from(token, 'base64url');
  const cases: Record<string, string> = {
    empty: '',
    'one character': 'A',
    'base64 alphabet': token.replace(/-/g, '+').replace(/_/g, '/') + (token.includes('-') || token.includes('_') ? '' : '+'),
    padded: `${token}=`,
    'with a dot': `${token}.`,
    truncated: token.slice(0, -1),
    'tag cut short': bytes.subarray(0, bytes.length - 1).toString('base64url'),
    'a byte appended': Buffer.concat([bytes, Buffer.of(0)]).toString('base64url'),
    'a byte dropped in the middle': Buffer.concat([bytes.subarray(0, 20), bytes.subarray(21)]).toString('base64url'),
    'version 2': Buffer.concat([Buffer.of(2), bytes.subarray(1)]).toString('base64url'),
    'over-long': 'A'.repeat(10_000),
    'white space': ` ${token}`,
    'percent-encoded': encodeURIComponent(`${token}/`),
  };
  for (const [name, value] of Object.entries(cases)) t.equal(verifyCapability(ring, value, NOW), null, name);
  t.equal(verifyCapability(ring, 42 as unknown as string, NOW), null, 'not a string');
});

t.test('a re-signed token with changed claims verifies only when signed with the right key', async (t) => {
  // The tag is what protects the claims: a forger who knows the layout but not the key gets nowhere.
  const ring = parseKeyRing(newKeyRing());
  const token = issueCapability(ring, target, { now: NOW });
  const bytes = Buffer.from(token, 'base64url');
  const payload = Buffer.from(bytes.subarray(0, bytes.length - 32));
  payload.writeUInt16BE(9, payload.length - 10); // index 3 -> 9
  const sign = (key: Buffer) =>
    Buffer.concat([payload, createHmac('sha256', key).update('mailcairn-capability\u0000').update(payload).digest()]).toString('base64url');
  t.equal(verifyCapability(ring, sign(Buffer.alloc(32)), NOW), null, 'a guessed key');
  t.equal(verifyCapability(ring, sign(purposeKey(ring, 'token-sealing').key), NOW), null, 'the key of another purpose');
  t.match(verifyCapability(ring, sign(purposeKey(ring, 'capability-signing').key), NOW), { index: 9 }, 'the layout is as documented');
});

t.test('rotation: an older key still held verifies, a removed or foreign one does not', async (t) => {
  const firstText = newKeyRing();
  const first = parseKeyRing(firstText);
  const rotatedText = rotateKeyRing(firstText);
  const rotated = parseKeyRing(rotatedText);
  const oldToken = issueCapability(first, target, { now: NOW });
  const newToken = issueCapability(rotated, target, { now: NOW });
  t.not(rotated.activeKeyId, first.activeKeyId);
  t.match(verifyCapability(rotated, oldToken, NOW), { keyId: first.activeKeyId }, 'signed under a key the ring still holds');
  t.match(verifyCapability(rotated, newToken, NOW), { keyId: rotated.activeKeyId }, 'signed under the active key');
  t.equal(verifyCapability(first, newToken, NOW), null, 'a key the older ring never had');

  const file = JSON.parse(rotatedText) as { keys: Array<{ id: string }> };
  file.keys = file.keys.filter((key) => key.id !== first.activeKeyId);
  const pruned = parseKeyRing(JSON.stringify(file));
  t.equal(verifyCapability(pruned, oldToken, NOW), null, 'the old key was removed from the ring');
  t.ok(verifyCapability(pruned, newToken, NOW));
  t.equal(verifyCapability(parseKeyRing(newKeyRing()), oldToken, NOW), null, 'another deployment');
});

t.test('lifetimes above thirty minutes, and targets that cannot be encoded, are refused at issue', async (t) => {
  const ring = parseKeyRing(newKeyRing());
  t.ok(verifyCapability(ring, issueCapability(ring, target, { now: NOW, lifetimeMs: CAPABILITY_MAX_LIFETIME_MS }), NOW), 'thirty minutes exactly');
  for (const lifetimeMs of [CAPABILITY_MAX_LIFETIME_MS + 1, 3_600_000, 0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    t.throws(() => issueCapability(ring, target, { now: NOW, lifetimeMs }), RangeError, `lifetime ${lifetimeMs}`);
  }
  for (const bad of [
    { messageId: 0 },
    { messageId: -1 },
    { messageId: 2 ** 53 },
    { index: -1 },
    { index: 65_536 },
    { index: 0.5 },
    { accountId: '' },
    { accountId: 'x'.repeat(256) },
  ]) {
    t.throws(() => issueCapability(ring, { ...target, ...bad }, { now: NOW }), RangeError, JSON.stringify(bad));
  }
});

t.test('the link is built from the declared address, keeping its path prefix', async (t) => {
  const token = 'AbC-_9';
  t.equal(attachmentLink('https://mail.example.org', token), 'https://mail.example.org/attachments/AbC-_9');
  t.equal(attachmentLink('https://mail.example.org/', token), 'https://mail.example.org/attachments/AbC-_9');
  t.equal(attachmentLink('https://example.org/mailcairn', token), 'https://example.org/mailcairn/attachments/AbC-_9');
  t.equal(attachmentLink('https://example.org/mailcairn/', token), 'https://example.org/mailcairn/attachments/AbC-_9');
  t.equal(attachmentLink('https://Example.ORG:443/a/b/', token), 'https://example.org/a/b/attachments/AbC-_9', 'canonical host, default port dropped');
  t.equal(attachmentLink('http://127.0.0.1:8080', token), 'http://127.0.0.1:8080/attachments/AbC-_9');
  t.throws(() => attachmentLink('https://mail.example.org', 'a/b'), RangeError);
  t.throws(() => attachmentLink('https://mail.example.org', ''), RangeError);
});

t.test('links are issued only with both a key ring and a public address', async (t) => {
  const ring = 'file:/run/secrets/keyring';
  const address = 'https://mail.example.org';
  t.equal(canIssueLinks({ DataEncryption: { KeyRing: ring }, Deployment: { PublicBaseAddress: address } }), true);
  t.equal(canIssueLinks({ DataEncryption: {}, Deployment: { PublicBaseAddress: address } }), false);
  t.equal(canIssueLinks({ DataEncryption: { KeyRing: ring }, Deployment: {} }), false);
  t.equal(canIssueLinks({ DataEncryption: {}, Deployment: {} }), false);
});

t.test('the key ring is read from its reference at each use', async (t) => {
  const text = newKeyRing();
  const env: NodeJS.ProcessEnv = { MAILCAIRN_TEST_RING: text };
  t.equal(createLinkKeyRing({ DataEncryption: {} }, { env }).current(), null);
  const links = createLinkKeyRing({ DataEncryption: { KeyRing: 'env:MAILCAIRN_TEST_RING' } }, { env });
  const ring = links.current();
  t.equal(ring?.activeKeyId, parseKeyRing(text).activeKeyId);
  env.MAILCAIRN_TEST_RING = rotateKeyRing(text);
  t.not(links.current()?.activeKeyId, ring?.activeKeyId, 'a rotation takes effect without a restart');
  delete env.MAILCAIRN_TEST_RING;
  t.throws(() => links.current(), { code: 'E_CONFIG_SECRET_UNREADABLE' });
});

t.test('the ring held in memory: parsed once per change of the file, not per link; a rotation or removal seen by the next verification', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'keyring.json');
  const settled = (text: string): void => {
    writeFileSync(path, text);
    const past = new Date(Date.now() - 60_000);
    utimesSync(path, past, past);
  };
  const text = newKeyRing();
  settled(text);
  let reads = 0;
  let stats = 0;
  const secrets = createSecretCache({
    env: {},
    setting: 'DataEncryption:KeyRing',
    files: {
      stat: (p) => {
        stats += 1;
        return stat(p, { bigint: true });
      },
      readFile: (p) => {
        reads += 1;
        return readFile(p, 'utf8');
      },
    },
  });
  const links = createLinkKeyRing({ DataEncryption: { KeyRing: `file:${path}` } }, { secrets });
  t.equal(await createLinkKeyRing({ DataEncryption: {} }).fresh(), null, 'no ring configured');

  const ring = await links.fresh();
  t.equal(ring?.activeKeyId, parseKeyRing(text).activeKeyId);
  const token = issueCapability(links.current()!, target, { now: NOW });
  for (let i = 0; i < 50; i++) {
    t.equal(await links.fresh(), ring, 'the same ring object: not parsed again');
  }
  t.equal(reads, 1, 'the file was read once across 50 verifications');
  t.ok(stats >= 51, `each verification checked the file (${stats} stats)`);
  t.ok(verifyCapability((await links.fresh())!, token, NOW));

  const rotated = rotateKeyRing(text);
  settled(rotated);
  t.equal(links.current(), ring, 'issuing does not wait: the ring as of the last finished check');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(links.current()?.activeKeyId, parseKeyRing(rotated).activeKeyId, 'and it started the check the next issue sees');
  const next = await links.fresh();
  t.equal(next?.activeKeyId, parseKeyRing(rotated).activeKeyId, 'the rotated ring, without restart');
  t.ok(verifyCapability(next!, token, NOW), 'a link signed under the older key the ring keeps still verifies');

  settled('{ not a ring');
  const broken = await links.fresh().catch((err: unknown) => err);
  t.match(broken, { code: 'E_KEYRING_INVALID' });
  t.equal(await links.fresh().catch((err: unknown) => err), broken, 'a broken file is refused with the error of its one parse');

  rmSync(path);
  await t.rejects(links.fresh(), { code: 'E_CONFIG_SECRET_UNREADABLE' }, 'a removed ring verifies nothing');
  t.throws(() => links.current(), { code: 'E_CONFIG_SECRET_UNREADABLE' });
});
