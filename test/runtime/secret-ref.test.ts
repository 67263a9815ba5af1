/**
 * Secret references: material read at each use (rotation without restart
 * or reload), the three schemes, and failures that name the scheme and the
 * setting but never the path, the variable or the material.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../config/load.ts';
import { readSecret } from '../../runtime/secret-ref.ts';
import { AppError } from '../../runtime/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-secret-'));

function failure(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

t.test('a rewritten file is seen on the next read, with no reload of the configuration', (t) => {
  const keyFile = join(dir, 'agent.key');
  writeFileSync(keyFile, 'first-key-material\n');
  const configFile = join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      McpEndpoint: { Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${keyFile}`, Lifetime: 'NoLimit' } }] },
    }),
  );
  const config = loadConfig({ file: configFile, env: {} });
  const ref = config.McpEndpoint.Authentication[0]?.ApiKey?.SecretReference ?? '';
  t.equal(readSecret(ref), 'first-key-material', 'one trailing newline is dropped');
  writeFileSync(keyFile, 'second-key-material');
  t.equal(readSecret(ref), 'second-key-material', 'the rotated material is read');
  t.end();
});

t.test('only one trailing newline is dropped', (t) => {
  const path = join(dir, 'two-newlines');
  writeFileSync(path, 'material\n\n');
  t.equal(readSecret(`file:${path}`), 'material\n');
  writeFileSync(path, 'material\r\n');
  t.equal(readSecret(`file:${path}`), 'material');
  t.end();
});

t.test('env: reads the variable at each call', (t) => {
  const env: NodeJS.ProcessEnv = { AGENT_KEY: 'from-env-1' };
  t.equal(readSecret('env:AGENT_KEY', env), 'from-env-1');
  env.AGENT_KEY = 'from-env-2';
  t.equal(readSecret('env:AGENT_KEY', env), 'from-env-2');
  t.end();
});

t.test('systemd: reads $CREDENTIALS_DIRECTORY/NAME', (t) => {
  const credentials = join(dir, 'credentials');
  mkdirSync(credentials);
  writeFileSync(join(credentials, 'mcp-agent'), 'systemd-material\n');
  t.equal(readSecret('systemd:mcp-agent', { CREDENTIALS_DIRECTORY: credentials }), 'systemd-material');
  writeFileSync(join(credentials, 'mcp-agent'), 'systemd-rotated');
  t.equal(readSecret('systemd:mcp-agent', { CREDENTIALS_DIRECTORY: credentials }), 'systemd-rotated');
  const err = failure(() => readSecret('systemd:mcp-agent', {}, 'AdminEndpoint:Authentication:0:ApiKey'));
  t.equal(err.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(err.message, /CREDENTIALS_DIRECTORY is not set/);
  t.end();
});

t.test('a missing file names the scheme and the setting, never the path', (t) => {
  const path = join(dir, 'very-private-location', 'key');
  const err = failure(() => readSecret(`file:${path}`, {}, 'McpEndpoint:Authentication:0:ApiKey'));
  t.equal(err.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(err.message, /McpEndpoint:Authentication:0:ApiKey \(file:\) could not be read: nothing exists there/);
  t.notMatch(err.message, /very-private-location/);
  t.notMatch(JSON.stringify(err.details), /very-private-location/);
  t.end();
});

t.test('an unset variable names the scheme, never the variable', (t) => {
  const err = failure(() => readSecret('env:SUPER_SECRET_VARIABLE_NAME', {}, 'Embeddings:ApiKey'));
  t.match(err.message, /Embeddings:ApiKey \(env:\) could not be read/);
  t.notMatch(err.message, /SUPER_SECRET_VARIABLE_NAME/);
  t.end();
});

t.test('unreadable and empty material are refused without echoing anything', (t) => {
  const empty = join(dir, 'empty');
  writeFileSync(empty, '\n');
  t.match(failure(() => readSecret(`file:${empty}`)).message, /the material is empty/);
  if (process.getuid?.() !== 0) {
    const locked = join(dir, 'locked');
    writeFileSync(locked, 'locked-material');
    chmodSync(locked, 0o000);
    const err = failure(() => readSecret(`file:${locked}`));
    t.match(err.message, /permission denied/);
    t.notMatch(err.message, /locked-material|\/locked/);
  }
  t.match(failure(() => readSecret('plain-inline-material')).message, /not a secret reference/);
  t.notMatch(failure(() => readSecret('plain-inline-material')).message, /plain-inline-material/);
  t.end();
});

t.test('a deleted file is reported, and a restored one read again', (t) => {
  const path = join(dir, 'comes-and-goes');
  writeFileSync(path, 'v1');
  t.equal(readSecret(`file:${path}`), 'v1');
  rmSync(path);
  t.equal(failure(() => readSecret(`file:${path}`)).code, 'E_CONFIG_SECRET_UNREADABLE');
  writeFileSync(path, 'v2');
  t.equal(readSecret(`file:${path}`), 'v2');
  t.end();
});

t.test('references are validated without reading them: relative paths and bad names are refused', (t) => {
  const file = join(dir, 'refs.json');
  writeFileSync(
    file,
    JSON.stringify({
      DataEncryption: { KeyRing: 'file:relative/keyring' },
      Embeddings: { ApiKey: 'env:1BAD' },
      Storage: { Database: 'libsql://db.example.org', AuthToken: 'systemd:../escape' },
    }),
  );
  let message = '';
  try {
    loadConfig({ file, env: {} });
  } catch (err) {
    message = (err as Error).message;
  }
  t.match(message, /DataEncryption:KeyRing: must be a secret reference/);
  t.match(message, /Embeddings:ApiKey: must be a secret reference/);
  t.match(message, /Storage:AuthToken: must be a secret reference/);
  t.end();
});
