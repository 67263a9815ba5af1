/**
 * auth-overhead: what each credential method adds to a cheap MCP call, against
 * the same call with no credential configured, in one run.
 *
 * Setup: four compiled daemons (dist/bin/mailcairnd.js), each with the MCP
 * endpoint on a loopback port and one account pointing at a closed port
 * (MailSynchronization off: no mail server is needed), differing only in
 * `McpEndpoint:Authentication`:
 *  - none: the empty list (the unauthenticated posture);
 *  - API key: one `ApiKey` entry (file: reference);
 *  - API key ×20: twenty `ApiKey` entries, each its own file, the request
 *    presenting the last one's key (every entry is compared either way);
 *  - key pair: one `PublicKey` entry (P-256); each request carries a fresh
 *    ES256 assertion (new jti, exp 2 min), signed before the clock starts, so
 *    the figure is the service's judging, replay-guard claim included;
 *  - OAuth: one `OAuth` entry whose issuer is a real oidc-provider in this
 *    process (test/harness/oauth-provider.ts); one JWT access token, minted
 *    once, presented on every request; discovery and the key set are cached
 *    by the daemon after the warm-up.
 * Every request carries `X-Forwarded-Proto: https` (the listener is clear
 * text; the default ReverseProxy settings trust the loopback peer), so the
 * four differ only in the credential.
 *
 * Measured: `tools/list` as a JSON-RPC POST through undici, one keep-alive
 * connection per daemon, one request at a time; BENCH_AUTH_WARMUP (default
 * 300) untimed calls per method, then BENCH_AUTH_REQUESTS (default 2000)
 * timed ones per method. The methods take turns request by request (the
 * order rotated each turn), so drift in the machine's load hits all of them
 * alike; the load average is in the note. RateLimiting is set out of the way
 * (TokenCapacity 1000000). Goals at p50: API key ≤ 1.1× and OAuth ≤ 1.3× of
 * no credential. A method whose answers were not all 200 is reported as such
 * (its figures would time a refusal, not the work).
 *
 * CPU per request: the user + system time of the daemon's main thread (where
 * HTTP, authentication and the MCP exchange run; from
 * /proc/<pid>/task/<pid>/stat, Linux only; clock ticks, usually 10 ms) over
 * the timed calls, divided by their number. Worker threads (idle actors, GC
 * helpers) are left out: they are the same in every daemon and only add
 * noise.
 *
 * BENCH_CPU_PROF=<dir>: the daemons run under `node --cpu-prof` and write
 * a `.cpuprofile` per thread into `auth-overhead-<method>/` there.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SignJWT } from 'jose';
import { Client } from 'undici';
import { startOAuthProvider } from '../../test/harness/oauth-provider.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round, summarize } from '../stats.ts';
import { benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { cpuProfileArgs, startBenchDaemon } from '../peers/daemon.ts';
import { exitWhenInterrupted } from '../interrupted.ts';

const RESOURCE = 'https://mail.example.test/mcp';
const SCOPE = 'mail.read';
const SUBJECT = 'bench-agent';
const START_LIMIT_MS = 60_000;
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

type Method = 'none' | 'API key' | 'API key ×20' | 'key pair' | 'OAuth';
const GOALS: Partial<Record<Method, number>> = { 'API key': 1.1, OAuth: 1.3 };

type Daemon = { port: number; pid: number; stop(): Promise<void> };

/** Clock ticks per second of /proc/<pid>/stat; `getconf CLK_TCK` is 100 on every Linux Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The main thread's user + system CPU time in ms, or NaN where /proc is not there. */
function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

async function startDaemon(dir: string, method: Method, authentication: unknown[]): Promise<Daemon> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pw'), 'nobody-reads-this');
  const port = await reservePort();
  const { config } = writeBenchConfig(dir, {
    McpEndpoint: benchMcpEndpoint(port, authentication),
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Enabled: false },
    // No mail server: the account points at a closed port and is never synchronized.
    Accounts: [
      {
        Id: 'bench',
        Imap: { Host: '127.0.0.1', Port: await reservePort(), Security: 'None', Username: 'nobody', Password: `file:${join(dir, 'pw')}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const d = startBenchDaemon({ config, output: 'stderr', nodeArgs: cpuProfileArgs(`auth-overhead-${method.replace(/[ ×]+/g, '-').toLowerCase()}`) });
  // Ready once the listener answers its readiness route.
  const started = performance.now();
  for (;;) {
    if (d.child.exitCode !== null) throw new Error(`mailcairnd (${method}) exited (${d.child.exitCode}): ${d.logTail(Number.POSITIVE_INFINITY).trim()}`);
    if (performance.now() - started > START_LIMIT_MS) {
      await d.stop();
      throw new Error(`mailcairnd (${method}) not ready within ${START_LIMIT_MS / 1000} s`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, pid: d.pid, stop: d.stop };
}

/** One method under test: its daemon, its connection, and how a request's credential is made (untimed). */
type Subject = {
  method: Method;
  daemon: Daemon;
  client: Client;
  bearer: () => Promise<string | null>;
  samples: number[];
  wallMs: number;
  statuses: Map<number, number>;
  /** The daemon's CPU time over the timed calls, ms. */
  cpuMs: number;
};

async function call(subject: Subject, bearer: string | null): Promise<number> {
  const res = await subject.client.request({
    method: 'POST',
    path: '/mcp',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-forwarded-proto': 'https',
      ...(bearer !== null ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: BODY,
  });
  await res.body.text();
  return res.statusCode;
}

/** One call; timed ones are recorded with their status. */
async function sample(subject: Subject, timed: boolean): Promise<void> {
  const bearer = await subject.bearer();
  const start = performance.now();
  const status = await call(subject, bearer);
  const elapsed = performance.now() - start;
  if (!timed) return;
  subject.samples.push(elapsed);
  subject.wallMs += elapsed;
  subject.statuses.set(status, (subject.statuses.get(status) ?? 0) + 1);
}

function answers(statuses: Map<number, number>): string {
  return [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');
}

export const authOverhead: Scenario = {
  name: 'auth-overhead',
  description: 'tools/list latency per credential method (API key, key pair, OAuth) vs no credential, one daemon each, same run',
  async run() {
    const requests = Math.max(10, Number(process.env.BENCH_AUTH_REQUESTS ?? '2000'));
    const warmup = Math.max(1, Number(process.env.BENCH_AUTH_WARMUP ?? '300'));
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-auth-'));
    trackDir(dir);
    const log = (line: string): void => void process.stderr.write(`[auth-overhead] ${line}\n`);
    const letGo = exitWhenInterrupted('auth-overhead');

    const provider = await startOAuthProvider({ users: [SUBJECT], accessTokenTtl: 3600, resource: { indicator: RESOURCE, scopes: [SCOPE] } });
    const subjects: Subject[] = [];
    let loadAtStart = Number.NaN;
    let loadAtEnd = Number.NaN;
    try {
      const apiKey = `mc_${randomBytes(24).toString('base64url')}`;
      writeFileSync(join(dir, 'agent.key'), apiKey);
      const manyKeys = Array.from({ length: 20 }, () => `mc_${randomBytes(24).toString('base64url')}`);
      for (const [i, key] of manyKeys.entries()) writeFileSync(join(dir, `agent-${i + 1}.key`), key);
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      writeFileSync(join(dir, 'signer.pem'), publicKey.export({ type: 'spki', format: 'pem' }) as string);
      const token = await provider.mintAccessToken(SUBJECT);

      const methods: Array<{ method: Method; authentication: unknown[]; bearer: () => Promise<string | null> }> = [
        { method: 'none', authentication: [], bearer: async () => null },
        {
          method: 'API key',
          authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }],
          bearer: async () => apiKey,
        },
        {
          method: 'API key ×20',
          authentication: manyKeys.map((_, i) => ({
            ApiKey: { Name: `agent-${i + 1}`, SecretReference: `file:${join(dir, `agent-${i + 1}.key`)}`, Lifetime: 'NoLimit' },
          })),
          bearer: async () => manyKeys[manyKeys.length - 1]!,
        },
        {
          method: 'key pair',
          authentication: [{ PublicKey: { Name: 'signer', SecretReference: `file:${join(dir, 'signer.pem')}`, Lifetime: 'NoLimit' } }],
          bearer: () =>
            new SignJWT({})
              .setProtectedHeader({ alg: 'ES256', typ: 'service-client-assertion+jwt' })
              .setAudience('urn:service:mcp')
              .setIssuedAt()
              .setExpirationTime('2m')
              .setJti(randomBytes(16).toString('base64url'))
              .sign(privateKey),
        },
        {
          method: 'OAuth',
          authentication: [
            {
              OAuth: {
                Resource: RESOURCE,
                RequiredScopes: [SCOPE],
                AuthorizationServers: [{ Name: 'harness', Issuer: provider.issuer, AuthorizedSubjects: [SUBJECT] }],
              },
            },
          ],
          bearer: async () => token,
        },
      ];
      for (const { method, authentication, bearer } of methods) {
        log(`starting the daemon for ${method}`);
        const daemon = await startDaemon(join(dir, method.replace(/[ ×]+/g, '-')), method, authentication);
        const client = new Client(`http://127.0.0.1:${daemon.port}`, { pipelining: 1, keepAliveTimeout: 60_000 });
        subjects.push({ method, daemon, client, bearer, samples: [], wallMs: 0, statuses: new Map(), cpuMs: 0 });
      }

      log(`warm-up: ${warmup} calls each`);
      for (const subject of subjects) for (let i = 0; i < warmup; i++) await sample(subject, false);
      globalThis.gc?.();
      log(`measuring: ${requests} calls each, the methods taking turns`);
      loadAtStart = loadavg()[0]!;
      const cpuAtStart = subjects.map((s) => cpuMsOf(s.daemon.pid));
      for (let i = 0; i < requests; i++) {
        for (let k = 0; k < subjects.length; k++) await sample(subjects[(i + k) % subjects.length]!, true);
      }
      for (const [i, s] of subjects.entries()) s.cpuMs = cpuMsOf(s.daemon.pid) - cpuAtStart[i]!;
      loadAtEnd = loadavg()[0]!;
    } finally {
      for (const subject of subjects) {
        await subject.client.close().catch(() => undefined);
        await subject.daemon.stop();
      }
      await provider.stop();
      letGo();
      if (process.env.BENCH_CPU_PROF) log(`CPU profiles in ${resolve(process.env.BENCH_CPU_PROF)}`);
      rmSync(dir, { recursive: true, force: true });
    }

    const baseline = summarize(subjects[0]!.samples, subjects[0]!.wallMs);
    return subjects.map((subject, index): Row => {
      const s = summarize(subject.samples, subject.wallMs);
      const served = subject.statuses.size === 1 && subject.statuses.has(200);
      const p50Ratio = round(s.p50Us / baseline.p50Us, 2);
      const goal = GOALS[subject.method];
      return {
        credential: subject.method,
        requests: s.count,
        'p50 µs': s.p50Us,
        'p99 µs': s.p99Us,
        'req/s': s.perSecond,
        'CPU µs/req': Number.isNaN(subject.cpuMs) ? 'n/a' : Math.round((subject.cpuMs * 1_000) / s.count),
        'p50 × none': p50Ratio,
        'p99 × none': round(s.p99Us / baseline.p99Us, 2),
        'goal p50': goal === undefined ? '' : `≤ ${goal}×`,
        verdict: !served ? 'not served: figures time a refusal' : goal === undefined ? '' : p50Ratio <= goal ? 'met' : 'MISSED',
        answers: answers(subject.statuses),
        note: index === 0 ? `${availableParallelism()} cores; load average ${round(loadAtStart, 1)} at start, ${round(loadAtEnd, 1)} at end` : '',
      };
    });
  },
};
