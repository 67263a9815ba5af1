/** The `mailcairnd` commands besides running: check-config and keyring, as an operator types them. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseKeyRing } from '../../runtime/keyring/keyring.ts';
import { spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';

t.test('check-config prints the posture and warnings and exits 0; a refusal exits 78 naming the setting', async (t) => {
  const dir = tempDir(t);
  const ok = spawnDaemon([
    'check-config',
    '--config',
    writeConfig(dir, { McpEndpoint: { Enabled: true, Port: 18999 }, Storage: { Database: join(dir, 'm.db') } }),
  ]);
  t.equal((await ok.exited).code, 0);
  t.match(ok.stdout(), /McpEndpoint/);
  t.match(ok.stdout(), /authentication/i, 'the unauthenticated-posture warning is printed');
  const bad = spawnDaemon(['check-config', '--config', writeConfig(dir, { McpEndpoint: { RateLimiting: { MaxConcurrentRequests: 0 } } })]);
  t.equal((await bad.exited).code, 78);
  t.match(bad.stdout(), /McpEndpoint:RateLimiting:MaxConcurrentRequests/);
  t.match(bad.stdout(), /1 and 1000/);
});

t.test('keyring new writes an owner-only file that parses, refuses to overwrite, and rotate adds an active key', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'keyring.json');
  const made = spawnDaemon(['keyring', 'new', '--out', file]);
  t.equal((await made.exited).code, 0);
  t.equal(statSync(file).mode & 0o777, 0o600);
  const ring = parseKeyRing(readFileSync(file, 'utf8'));
  const again = spawnDaemon(['keyring', 'new', '--out', file]);
  t.equal((await again.exited).code, 1);
  t.match(again.stderr(), /exists/i);
  t.notMatch(again.stderr() + again.stdout(), /"key"/, 'no key material printed');
  const rotated = spawnDaemon(['keyring', 'rotate', file]);
  t.equal((await rotated.exited).code, 0);
  const after = parseKeyRing(readFileSync(file, 'utf8'));
  t.not(after.activeKeyId, ring.activeKeyId);
});
