/**
 * Fuzz family: IMAP server answers. A real Dovecot behind the fault proxy
 * (test/harness/fault-proxy.ts), whose rewriter corrupts one place of what the
 * server says — a truncated literal, a literal count that lies, a garbage
 * untagged line, a malformed FETCH response, an unknown response code, an
 * overlong line, a NUL, invalid UTF-8, an early BYE — while a synchronization
 * run (the real SyncRun, its FolderRun and imapflow, storing into a real
 * database) mirrors a small folder. Each corruption gets its own account, so
 * every run fetches the messages' bodies; after it, the proxy stops corrupting
 * and a clean run of the same account must make the mirror equal the server.
 *
 * Goals: no defect (nothing thrown past the classifier, no BAD: the proxy never
 * forges a tagged status), no corrupt row (the clean run converges on the
 * server for every account), outcomes named as the server's (protocol, or the
 * server gone for a BYE or a cut; never a defect), and no log line carrying
 * generated input. Only corruptions the client could notice are generated:
 * a byte changed inside a literal's content, or a well-formed lie about flags,
 * would be stored as the server said it (IMAP carries no checksum).
 *
 * The derivation writer is not part of this family: a run's ask to it is
 * answered "nothing derived", as the writer would for rows it already held.
 *
 * Replay: MAILCAIRN_FUZZ_SEED=<seed> MAILCAIRN_FUZZ_RUNS=<n> npx tap test/fuzz/imap-answers.test.ts
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import type { ImapFlow } from 'imapflow';
import t from 'tap';
import { openSession } from '../../actors/imap-sync/connection.ts';
import { ImapSyncConfig, syncActorId } from '../../actors/imap-sync/protocol.ts';
import { SyncRun } from '../../actors/imap-sync/sync-run.ts';
import { loadConfig } from '../../config/load.ts';
import { storeSlice } from '../../config/store-slice.ts';
import { reconcileAccounts } from '../../runtime/store/accounts.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { systemChildren } from '../../service/system-children.ts';
import { mailAdmin } from '../harness/doveadm.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { type FaultProxy, type Rewriter, startFaultProxy } from '../harness/fault-proxy.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { captureLog } from '../helpers/log-capture.ts';
import { readMirror } from '../helpers/mirror.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(3004);
// Some corruptions land past the run's last line (harmless, counted apart): enough are generated that at least 1,000 reach the client.
const RUNS = fuzzRuns(1_100);
const LANES = 12;
const MESSAGES = 3;

// ------------------------------------------------------------------ corruptions

type Kind =
  | 'truncated-literal'
  | 'literal-count-short'
  | 'literal-count-long'
  | 'garbage-untagged'
  | 'bad-fetch'
  | 'unknown-code'
  | 'overlong-line'
  | 'nul'
  | 'invalid-utf8'
  | 'early-bye';

type Corruption = { kind: Kind; at: number; text: string; bytes: number[]; size: number; delta: number };

/** Printable text without CR, LF or brackets, for the parts of an inserted line. */
const words = fc.string({ unit: fc.constantFrom(...'abcXYZ019 :;,.-_=+!?#$&\'"<>/@'.split('')), minLength: 12, maxLength: 60 });
const badFetches = [
  (w: string) => `* 1 FETCH (UID ${w}`,
  (_w: string) => `* 1 FETCH (FLAGS (\\Seen) UID)`,
  (w: string) => `* 1 FETCH UID 1 FLAGS (${w}`,
  (w: string) => `* 1 FETCH (BODY[] ${w})`,
  (_w: string) => `* 1 FETCH (MODSEQ (abc) UID 1)`,
  (w: string) => `* 1 FETCH ((((((((${w}`,
  (w: string) => `* 1 FETCH (UID 1 RFC822.SIZE -5 ${w}`,
  (w: string) => `* 1 FETCH (INTERNALDATE "${w}" UID`,
];
const corruption: fc.Arbitrary<Corruption> = fc.record({
  kind: fc.constantFrom<Kind>(
    'truncated-literal',
    'literal-count-short',
    'literal-count-long',
    'garbage-untagged',
    'bad-fetch',
    'unknown-code',
    'overlong-line',
    'nul',
    'invalid-utf8',
    'early-bye',
  ),
  // Which line (outside literals) after the login the corruption lands before or on.
  at: fc.nat({ max: 24 }),
  text: words,
  bytes: fc.array(fc.constantFrom(0x80, 0xbf, 0xc0, 0xc3, 0xe2, 0xed, 0xf0, 0xf8, 0xff, 0xfe), { minLength: 1, maxLength: 6 }),
  size: fc.integer({ min: 70_000, max: 400_000 }),
  delta: fc.integer({ min: 1, max: 40 }),
});

/** The line inserted before the chosen line, for the kinds that insert one. */
function inserted(c: Corruption, variant: number): Buffer | null {
  switch (c.kind) {
    case 'garbage-untagged':
      return Buffer.from(`* ${c.text}\r\n`);
    case 'bad-fetch':
      return Buffer.from(`${badFetches[variant % badFetches.length]!(c.text)}\r\n`);
    case 'unknown-code':
      return Buffer.from(`* OK [X-${c.text.replace(/[^A-Za-z0-9]/g, 'Q').toUpperCase()} ${c.delta}] ${c.text}\r\n`);
    case 'overlong-line':
      return Buffer.from(`* OK ${'x'.repeat(c.size)}${c.text}\r\n`);
    case 'nul':
      return Buffer.concat([Buffer.from(`* OK ${c.text.slice(0, 6)}`), Buffer.from([0]), Buffer.from(`${c.text.slice(6)}\r\n`)]);
    case 'invalid-utf8':
      return Buffer.concat([Buffer.from(`* 1 FETCH (FLAGS (\\Seen $`), Buffer.from(c.bytes), Buffer.from(`${c.text.replace(/\W/g, '')}))\r\n`)]);
    case 'early-bye':
      return Buffer.from(`* BYE ${c.text}\r\n`);
    default:
      return null;
  }
}

/**
 * A rewriter that follows the server's lines and literals (`{n}` at a line's end
 * opens n bytes of literal content) and applies one corruption at the chosen
 * line: an inserted line goes before it; a literal count is changed on the
 * first literal-opening line at or after it (shorter: its last bytes read as
 * garbage; longer: the connection ends there, the count never met); a literal
 * is truncated by ending the connection inside it. Literal content is never
 * altered in place.
 */
function corrupter(c: Corruption, variant: number, applied: () => void): Rewriter {
  let lines = 0;
  let literal = 0;
  let pending = Buffer.alloc(0);
  let done = false;
  return (chunk) => {
    if (done) return { bytes: chunk };
    const out: Buffer[] = [];
    let data = Buffer.concat([pending, chunk]);
    pending = Buffer.alloc(0);
    while (data.length > 0 && !done) {
      if (literal > 0) {
        const take = Math.min(literal, data.length);
        if (c.kind === 'truncated-literal' && lines >= c.at) {
          const keep = Math.max(0, Math.floor(take / 2));
          out.push(data.subarray(0, keep));
          done = true;
          applied();
          return { bytes: Buffer.concat(out), end: true };
        }
        out.push(data.subarray(0, take));
        literal -= take;
        data = data.subarray(take);
        continue;
      }
      const eol = data.indexOf('\r\n');
      if (eol < 0) {
        pending = data; // a line's start: kept until its end arrives
        data = Buffer.alloc(0);
        break;
      }
      const line = data.subarray(0, eol + 2);
      data = data.subarray(eol + 2);
      const opens = /\{(\d+)\}\r\n$/.exec(line.toString('latin1'));
      if (lines >= c.at && !done) {
        const before = inserted(c, variant);
        if (before !== null) {
          out.push(before);
          done = true;
          applied();
        } else if (opens && (c.kind === 'literal-count-short' || c.kind === 'literal-count-long')) {
          const n = Number(opens[1]);
          const lie = c.kind === 'literal-count-short' ? Math.max(0, n - c.delta) : n + c.delta;
          const text = line.toString('latin1');
          out.push(Buffer.from(`${text.slice(0, opens.index)}{${lie}}\r\n`, 'latin1'));
          done = true;
          applied();
          if (c.kind === 'literal-count-long') {
            // Exactly n bytes follow where n + delta were announced: the client waits for the rest, which never comes.
            out.push(data.subarray(0, Math.min(n, data.length)));
            return { bytes: Buffer.concat(out), end: true };
          }
          out.push(data);
          return { bytes: Buffer.concat(out) };
        }
      }
      out.push(line);
      lines += 1;
      if (opens) literal = Number(opens[1]);
    }
    if (done) out.push(data);
    return { bytes: Buffer.concat(out) };
  };
}

// ------------------------------------------------------------------ the family

/** One proxy, and the session kept across corruptions while they leave it whole (a login per corruption would be most of the cost). */
type Lane = { proxy: FaultProxy; client: ImapFlow | null };

t.test('IMAP answers fuzz: corrupted server answers during a synchronization run', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'fuzz', password: 'pw-fuzz' }] });
  t.teardown(() => dovecot.stop());
  const generated = [...generateMailbox({ seed: 30, count: MESSAGES, profile: 'small' })];
  await writeMaildir(dovecot, 'fuzz', 'INBOX', generated);
  const server = (await mailAdmin(dovecot).fetchAll('fuzz', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
  t.equal(server.length, MESSAGES, 'the folder is in place');

  const lanes: Lane[] = [];
  for (let i = 0; i < LANES; i++) {
    const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port }, { seed: i + 1 });
    t.teardown(() => proxy.close());
    lanes.push({ proxy, client: null });
  }

  // The account's configuration as the service builds it, then one account id per corruption.
  const dir = tempDir(t);
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, 'pw-fuzz');
  const configFile = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: join(dir, 'mailcairn.db') },
    MailSynchronization: { BatchSize: 50, ConnectTimeout: '00:00:03', CommandTimeout: '00:00:03' },
    Accounts: [
      {
        Id: 'template',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'fuzz', Password: `file:${passwordFile}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const loaded = loadConfig({ file: configFile, env: {} });
  const template = ImapSyncConfig.parse(systemChildren(loaded).find((c) => c.id === syncActorId('template'))!.config);
  const db = openSlice(storeSlice(loaded));
  t.teardown(() => db.close());
  migrate(db);
  const ids = Array.from({ length: RUNS + LANES }, (_, i) => `f${i}`);
  reconcileAccounts(db, ids);
  const logs = captureLog();

  /** One run of `account` through `lane`, to its end; the name of its outcome, or 'defect' when something was thrown past the classifier. */
  const runOnce = async (account: string, lane: Lane): Promise<{ outcome: string; detail: string }> => {
    const config: ImapSyncConfig = { ...template, account, imap: { ...template.imap, port: lane.proxy.port } };
    const run = new SyncRun({
      db,
      config,
      log: logs.log.child({ actor: syncActorId(account) }),
      async session(fresh) {
        if (lane.client?.usable && !fresh) return lane.client;
        lane.client?.close();
        lane.client = null;
        lane.client = await openSession(config, { pass: 'pw-fuzz' });
        return lane.client;
      },
      derive: async () => ({ derived: 0, unreadable: [], missingRaw: 0 }),
      now: Date.now,
    });
    let result: { outcome: string; detail: string } | null = null;
    try {
      result = await toEnd(run, account);
      return result;
    } catch (err) {
      if (process.env.FUZZ_DEBUG)
        console.error(
          'DEFECT',
          account,
          (err as Error).message,
          (err as { command?: unknown }).command,
          JSON.stringify((err as { attributes?: unknown }).attributes ?? null)?.slice(0, 300),
        );
      result = { outcome: 'defect', detail: (err as Error)?.name ?? 'thrown' };
      return result;
    } finally {
      // A session that met trouble is not trusted with the next corruption.
      if (result?.outcome !== 'ok') {
        lane.client?.close();
        lane.client = null;
      }
    }
  };
  const toEnd = async (run: SyncRun, account: string): Promise<{ outcome: string; detail: string }> => {
    for (;;) {
      const summary = await run.step(0);
      if (summary === null) continue;
      if (summary.outcome === 'ok') return { outcome: 'ok', detail: 'ok' };
      if (summary.outcome === 'failed') return { outcome: nameOf(run.failureCode), detail: run.failureCode ?? 'none' };
      const folder = logs.events('sync.folder-failed').findLast((l) => l.actor === syncActorId(account));
      const code = (folder?.imap as { code?: string } | undefined)?.code ?? (folder?.err as { code?: string } | undefined)?.code ?? 'unknown';
      return { outcome: 'server-protocol', detail: `folder ${code}` };
    }
  };

  const tally = new FuzzTally('imap-answers', SEED);
  const corrupt: string[] = [];
  const notApplied = { count: 0 };
  const byKind = new Map<string, Map<string, number>>();
  const inputs: string[] = [];
  let next = 0;
  const samples = fc.sample(fc.tuple(corruption, fc.nat({ max: 1_000 })), { seed: SEED, numRuns: RUNS });

  const lane = async (l: Lane): Promise<void> => {
    for (;;) {
      const index = next++;
      if (index >= samples.length) return;
      const [c, variant] = samples[index]!;
      const account = ids[index]!;
      let applied = false;
      inputs.push(c.text);
      l.proxy.rewrite(
        corrupter(c, variant, () => {
          applied = true;
        }),
      );
      if (process.env.FUZZ_DEBUG) console.error('INPUT', account, JSON.stringify(c), variant);
      const { outcome, detail } = await runOnce(account, l);
      l.proxy.rewrite(null);
      if (!applied) notApplied.count += 1;
      const name = applied ? outcome : `${outcome} (not reached)`;
      tally.record(name, detail, c);
      const kinds = byKind.get(c.kind) ?? new Map<string, number>();
      kinds.set(name, (kinds.get(name) ?? 0) + 1);
      byKind.set(c.kind, kinds);
      // The proxy no longer corrupts: a clean run makes the mirror equal the server (not needed when it already does).
      const database = join(dir, 'mailcairn.db');
      let clean = { outcome: 'ok', detail: 'not needed' };
      let mirror = readMirror(database, account, 'inbox');
      if (JSON.stringify(mirror) !== JSON.stringify(server)) {
        clean = await runOnce(account, l);
        mirror = readMirror(database, account, 'inbox');
      }
      if (clean.outcome !== 'ok' || JSON.stringify(mirror) !== JSON.stringify(server)) {
        corrupt.push(`${account} ${c.kind}@${c.at} ${clean.outcome} ${clean.detail}`);
        if (process.env.FUZZ_DEBUG) console.error('CORRUPT', account, JSON.stringify(c), JSON.stringify(mirror), JSON.stringify(server));
      }
    }
  };
  await Promise.all(lanes.map(lane));
  for (const l of lanes) l.client?.close();

  const { restarts, defects } = defectLines(logs.lines);
  const defectOutcomes =
    tally.requests - [...byKind.values()].reduce((n, m) => n + [...m.entries()].filter(([k]) => !k.startsWith('defect')).reduce((a, [, v]) => a + v, 0), 0);
  const leaks = linesCarrying(logs.raw(), inputs);
  t.comment(tally.summary({ restarts, defects: defects.length + defectOutcomes, leaks: leaks.length }));
  t.comment(
    `imap-answers by kind: ${[...byKind.entries()]
      .sort()
      .map(([k, m]) => `${k} {${[...m.entries()].map(([o, n]) => `${o}×${n}`).join(', ')}}`)
      .join('; ')}`,
  );
  const reached = tally.requests - notApplied.count;
  t.ok(reached >= Math.min(1_000, Math.floor(RUNS * 0.85)), `${reached} of ${RUNS} corruptions reached the client`);
  t.equal(defectOutcomes, 0, 'no corruption was taken for a defect');
  t.same(defects, [], 'no defect lines');
  t.same(corrupt.slice(0, 10), [], `after every corruption, a clean run made the mirror equal the server (${corrupt.length} did not)`);
  t.same(leaks.slice(0, 5), [], 'no log line carries generated input');
  for (const [kind, outcomes] of byKind) {
    const names = [...outcomes.keys()].filter((n) => !n.endsWith('(not reached)'));
    // A BYE, a cut or a literal never completed is the server gone; anything else it said is a protocol error or harmless.
    const allowed = ['early-bye', 'truncated-literal', 'literal-count-long'].includes(kind)
      ? ['ok', 'server-protocol', 'server-unresponsive']
      : ['ok', 'server-protocol'];
    t.same(
      names.filter((n) => !allowed.includes(n)),
      [],
      `${kind}: outcomes named ${allowed.join(' or ')}`,
    );
  }
});

function nameOf(code: string | null): string {
  if (code === 'E_IMAP_PROTOCOL') return 'server-protocol';
  if (code === 'E_IMAP_UNRESPONSIVE') return 'server-unresponsive';
  return `failed ${code ?? 'none'}`;
}
