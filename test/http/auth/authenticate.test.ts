/**
 * The authentication stage with API keys in files, as a request sees it:
 * a rewritten key file is honoured on the very next request without restart
 * (the old key refused), a deleted one stops the credential on the next
 * request and is logged by entry name only, and judging reads no file
 * synchronously (every `*Sync` function of node:fs is counted while requests
 * are judged: the only one allowed is `statSync`, a metadata look at each key
 * file, at most one per file and request).
 */
import fs, { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { CredentialEntry } from '../../../config/schema/credential-entry.ts';
import { createAuthenticator, type Authenticate } from '../../../http/auth/authenticate.ts';
import { createKeySets } from '../../../http/auth/oauth/key-sets.ts';
import type { EffectiveOrigin } from '../../../http/proxy.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';

const ORIGIN: EffectiveOrigin = { scheme: 'https', host: 'mail.example.test', overTls: false } as EffectiveOrigin;

function request(key: string): IncomingMessage {
  return { headers: { authorization: `Bearer ${key}` }, rawHeaders: ['Authorization', `Bearer ${key}`] } as unknown as IncomingMessage;
}

async function judge(authenticate: Authenticate, key: string): Promise<string> {
  const judged = await authenticate(request(key), ORIGIN);
  return judged.kind === 'admitted' && judged.partition.kind === 'api-key' ? judged.partition.name : judged.kind;
}

function setup(t: Test, keys: Record<string, string>) {
  const dir = tempDir(t);
  const logs = captureLog();
  const entries: CredentialEntry[] = Object.entries(keys).map(([name, key]) => {
    writeFileSync(join(dir, `${name}.key`), `${key}\n`);
    // Provisioned a minute ago, as key files are: a file modified within the last 2 s is read again at every check (racy).
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(join(dir, `${name}.key`), minuteAgo, minuteAgo);
    return { ApiKey: { Name: name, SecretReference: `file:${join(dir, `${name}.key`)}`, Lifetime: Number.POSITIVE_INFINITY } } as CredentialEntry;
  });
  const authenticate = createAuthenticator('mcp', entries, { log: logs.log, env: {}, claimJti: async () => true, keySets: createKeySets() });
  return { dir, logs, authenticate };
}

t.test('a rewritten key file is honoured on the next request, without restart; the old key is refused', async (t) => {
  const { dir, authenticate } = setup(t, { agent: 'mc_first-key-0123456789', other: 'mc_other-key-0123456789' });
  t.equal(await judge(authenticate, 'mc_first-key-0123456789'), 'agent');
  writeFileSync(join(dir, 'agent.key'), 'mc_second-key-0123456789\n');
  t.equal(await judge(authenticate, 'mc_second-key-0123456789'), 'agent', 'the new key admitted by the very next request');
  t.equal(await judge(authenticate, 'mc_first-key-0123456789'), 'refused', 'the replaced key is refused');
  t.equal(await judge(authenticate, 'mc_other-key-0123456789'), 'other', 'the other entry was never in the way');
});

t.test('a deleted key file stops the credential on the next request, logged by entry name only', async (t) => {
  const { dir, logs, authenticate } = setup(t, { agent: 'mc_doomed-key-0123456789', other: 'mc_other-key-0123456789' });
  t.equal(await judge(authenticate, 'mc_doomed-key-0123456789'), 'agent');
  rmSync(join(dir, 'agent.key'));
  t.equal(await judge(authenticate, 'mc_doomed-key-0123456789'), 'refused', 'refused by the very next request');
  t.equal(await judge(authenticate, 'mc_other-key-0123456789'), 'other', 'the other key still admits');
  const logged = logs.events('auth.material-unreadable');
  t.ok(logged.length > 0, 'logged at error');
  t.match(logged[0], { level: 50, entry: 'agent', setting: 'McpEndpoint:Authentication:0:ApiKey' });
  t.notMatch(logs.raw(), dir, 'never the path');
  t.notMatch(logs.raw(), 'mc_doomed-key', 'never the material');
});

t.test('judging requests reads no file synchronously: a stat per key file at most', async (t) => {
  const keys = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`agent-${i}`, `mc_key-${i}-0123456789abcdef`]));
  const { dir, authenticate } = setup(t, keys);
  t.equal(await judge(authenticate, 'mc_key-19-0123456789abcdef'), 'agent-19', 'warmed: the first request may wait for asynchronous reads');

  const calls: string[] = [];
  const originals = new Map<string, unknown>();
  const table = fs as unknown as Record<string, unknown>;
  for (const name of Object.keys(table).filter((n) => n.endsWith('Sync') && typeof table[n] === 'function')) {
    const original = table[name] as (...args: unknown[]) => unknown;
    originals.set(name, original);
    table[name] = (...args: unknown[]) => {
      calls.push(name);
      return original(...args);
    };
  }
  // Named imports of node:fs (`import { readFileSync }`) follow the patched table only after this.
  syncBuiltinESMExports();
  const restore = (): void => {
    for (const [name, original] of originals) table[name] = original;
    syncBuiltinESMExports();
  };
  t.teardown(restore);

  const seen: string[] = [];
  // Sequential and concurrent requests, with a rotation (so a changed file is read) in the window.
  for (let round = 0; round < 40; round++) {
    seen.push(await judge(authenticate, 'mc_key-7-0123456789abcdef'), await judge(authenticate, 'mc_nobody'));
    seen.push(...(await Promise.all(Array.from({ length: 5 }, () => judge(authenticate, 'mc_key-3-0123456789abcdef')))));
    if (round === 20) await writeFile(join(dir, 'agent-7.key'), 'mc_key-7-rotated-0123456789');
  }
  seen.push(await judge(authenticate, 'mc_key-7-rotated-0123456789'));
  restore();
  const judged = seen.length;
  t.same(
    calls.filter((name) => name !== 'statSync'),
    [],
    'no *Sync call of node:fs but statSync while judging',
  );
  t.ok(calls.length <= judged * 20, `at most one stat per key file and request (${calls.length} for ${judged} requests over 20 files)`);
  t.ok(calls.length > 0, 'the key files were looked at while judging');
  t.ok(seen.includes('agent-7') && seen.includes('agent-3') && seen.includes('refused'), 'admitted and refused requests were both judged');
  t.equal(seen.at(-1), 'agent-7', 'and the rotation in the window was picked up by the next request');
});
