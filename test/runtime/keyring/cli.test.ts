import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { keyringNew, keyringRotate } from '../../../runtime/keyring/cli.ts';
import { parseKeyRing, seal, unseal } from '../../../runtime/keyring/keyring.ts';

function scratch(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-keyring-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const mode = (path: string) => statSync(path).mode & 0o777;

t.test('keyring new without a path only returns the text', async (t) => {
  const result = keyringNew({});
  t.equal(result.path, undefined);
  t.equal(parseKeyRing(result.text).keyIds.length, 1);
});

t.test('keyring new writes an owner-only file and will not overwrite one', async (t) => {
  const path = join(scratch(t), 'keyring.json');
  const created = keyringNew({ out: path });
  t.equal(created.path, path);
  t.equal(readFileSync(path, 'utf8'), created.text);
  t.equal(mode(path), 0o600);

  const err = refusal(() => keyringNew({ out: path }));
  t.equal(err.code, 'E_KEYRING_EXISTS');
  t.match(err.message, `${path} already exists`);
  t.equal(readFileSync(path, 'utf8'), created.text, 'the existing ring is untouched');

  writeFileSync(path, created.text, { mode: 0o644 });
  const forced = keyringNew({ out: path, force: true });
  t.not(forced.text, created.text);
  t.equal(readFileSync(path, 'utf8'), forced.text);
  t.equal(mode(path), 0o600, 'a forced replacement is owner-only too');
  t.same(readdirSync(join(path, '..')), ['keyring.json'], 'no temporary file is left behind');
});

t.test('keyring rotate adds an active key and keeps what was sealed readable', async (t) => {
  const path = join(scratch(t), 'keyring.json');
  const { text } = keyringNew({ out: path });
  const before = parseKeyRing(text);
  const sealed = seal(before, 'token-sealing', 'refresh token');
  const rotated = keyringRotate(path);
  const after = parseKeyRing(readFileSync(path, 'utf8'));
  t.equal(rotated.activeKeyId, after.activeKeyId);
  t.same(after.keyIds, [before.activeKeyId, rotated.activeKeyId]);
  t.equal(unseal(after, 'token-sealing', sealed).toString(), 'refresh token');
  t.equal(mode(path), 0o600);
});

t.test('keyring rotate refuses a missing or malformed file and leaves it alone', async (t) => {
  const dir = scratch(t);
  t.equal(refusal(() => keyringRotate(join(dir, 'absent.json'))).code, 'E_KEYRING_MISSING');
  const path = join(dir, 'broken.json');
  writeFileSync(path, '{"format": "mailcairn-keyring"');
  t.equal(refusal(() => keyringRotate(path)).code, 'E_KEYRING_INVALID');
  t.equal(readFileSync(path, 'utf8'), '{"format": "mailcairn-keyring"');
});
