/**
 * Crash safety of the outbox with a real mailcairnd killed with SIGKILL at
 * random moments (issue 13): 200 sends (OUTBOX_KILL9_SENDS), each with its
 * own idempotencyKey, through the MCP SDK's client, while the daemon is
 * killed at least 50 times (OUTBOX_KILL9_KILLS) and started again on the
 * same database. A call cut by a kill is asked again with the same key on
 * the next incarnation: the caller's retry the key exists for. At most
 * sends/kills sends begin per incarnation, so they spread over the kills.
 * Most kills come 50-1000 ms after the daemon answers, some of them aimed
 * just after the SMTP server next sees a connection or a DATA; some while
 * it starts (0-400 ms after its outbox actor started: claims released and
 * due sends offered before any listener is open). The daemon is the emitted
 * JavaScript (`compiledDaemon()`), as under tsx every start costs about
 * three times as long, and every kill is followed by a start.
 *
 * The SMTP server (test/harness/smtp-server.ts, StartTls + AUTH) lives in
 * this process, on a fixed port, so it outlives every daemon and records
 * every delivery byte for byte. Recipients and DATA answers are chosen per
 * send from a seeded random (OUTBOX_KILL9_SEED replays the plan and the
 * kill delays, not the machine's timing; printed), so sends spread across
 * the stages: most accepted at once, some answered 450 at RCPT once, some
 * 550, some DATA answered 451 once (after the body, retried), and some DATA
 * accepted slowly (the 250 given 0.3-1.2 s after the final dot, the
 * message kept at the dot for half of them and only once answered for the
 * others), so kills land before the body, mid-DATA, and between a delivery
 * and its record. Some sends held back by a 450 are cancelled by the
 * caller.
 *
 * At the end, with the last daemon running and nothing Recorded any more,
 * the database (read-only) and the sink's deliveries are compared: no
 * Message-ID delivered twice to one recipient, every recorded send Sent
 * (each accepted recipient received it exactly once), Refused, Cancelled
 * or TransmissionBegun (awaiting the operator: delivered or not, both
 * counted), every send the caller was told about recorded once, and no
 * actor crashed. The counts are printed, and one `kill9 tally: outbox ...`
 * line (test/helpers/kill-tally.ts): "lost" counts sends not delivered
 * when they should have been (a recorded send left in no ended stage, an
 * accepted recipient who never received it, an acknowledged send with no
 * record); "duplicated" counts deliveries beyond one (a Message-ID received
 * twice by one recipient, a cancelled or refused recipient who received it,
 * a delivery of a message nobody asked for, two records for one key, a
 * record under a key the caller never had acknowledged).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import t from 'tap';
import { seededRandom } from '../../../runtime/clock.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startSmtpServer, type Delivery } from '../../harness/smtp-server.ts';
import { compiledDaemon, listenerPort, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { reportKills } from '../../helpers/kill-tally.ts';
import { reservePort } from '../../helpers/ports.ts';
import { eventually } from '../../helpers/eventually.ts';

t.setTimeout(720_000);

type Json = Record<string, any>;
const KEY = 'key-outbox-kill9-0123456789ab';
const SENDER = 'ann.owner@example.org';
const SMTP_LOGIN = { username: 'ann-smtp', password: 'smtp-secret-pw' };
const SENDS = Number(process.env.OUTBOX_KILL9_SENDS ?? 200);
const MIN_KILLS = Number(process.env.OUTBOX_KILL9_KILLS ?? 50);
const SEED = Number(process.env.OUTBOX_KILL9_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Sends begun per incarnation at most (cumulative), so the sends spread over the kills. */
const PER_INCARNATION = Math.max(1, Math.ceil(SENDS / MIN_KILLS));
/** Sends made whatever the budget: as many as kills, so every incarnation has work to be killed under. */
const MIN_SENDS = Math.min(SENDS, MIN_KILLS);
const WORKERS = 4;
/** How long an incarnation lives after it answers: uniform in this range. */
const LIFE_MS = [50, 1_000] as const;
/** Share of kills aimed at the start instead: 0-400 ms after the outbox actor started, before the listeners open. */
const EARLY_SHARE = 0.3;
/**
 * Share of the other kills aimed at an attempt: 0-30 ms after the SMTP server next accepts a
 * connection (before the body) or a DATA (mid-body or awaiting the answer), or after LIFE_MS[1]
 * if neither comes.
 */
const AIMED_SHARE = 0.4;
/**
 * In CI (`CI` set) no send is begun after this (OUTBOX_KILL9_SEND_BUDGET_MS) once MIN_SENDS were:
 * the sends are as many as fit, never fewer than MIN_SENDS, the kills never fewer than MIN_KILLS.
 * Elsewhere all SENDS are made. The floor does not depend on the machine's speed: on a loaded
 * machine (incarnations starting in 6 s instead of 1) the budget alone let 44 sends begin.
 */
const SEND_BUDGET_MS = Number(process.env.OUTBOX_KILL9_SEND_BUDGET_MS ?? (process.env.CI ? 120_000 : Number.POSITIVE_INFINITY));
/** The kill phase fails after this: a machine that slow tells nothing. */
const KILL_PHASE_LIMIT_MS = 540_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What one send asks of the SMTP server: its recipients name their fate. */
type Plan = { kind: 'plain' | 'slow' | 'busy' | 'busy-mixed' | 'gone-mixed' | 'gone' | 'tempdata'; to: string[]; cancel: boolean };

function plans(seed: number): Plan[] {
  const random = seededRandom(seed);
  return Array.from({ length: SENDS }, (_, i): Plan => {
    const r = random.next();
    const ok = (j: number) => `ok${i}.${j}@example.net`;
    const extra = Math.floor(random.next() * 3);
    const oks = Array.from({ length: 1 + extra }, (_, j) => ok(j));
    if (r < 0.5) return { kind: 'plain', to: oks, cancel: false };
    if (r < 0.67) return { kind: 'slow', to: [`slow${i}@example.net`, ...oks.slice(1)], cancel: false };
    if (r < 0.75) return { kind: 'busy', to: [`busy${i}@example.net`], cancel: random.next() < 0.6 };
    if (r < 0.82) return { kind: 'busy-mixed', to: [`busy${i}@example.net`, ok(0)], cancel: false };
    if (r < 0.88) return { kind: 'gone-mixed', to: [`gone${i}@example.net`, ok(0)], cancel: false };
    if (r < 0.93) return { kind: 'gone', to: [`gone${i}@example.net`], cancel: false };
    return { kind: 'tempdata', to: [`tmp${i}@example.net`, ...oks.slice(1)], cancel: false };
  });
}

function messageIdOf(raw: Buffer): string | null {
  const head = raw
    .toString('latin1')
    .split('\r\n\r\n', 1)[0]!
    .replace(/\r\n[ \t]+/g, ' ');
  return /^message-id:\s*(\S+)/im.exec(head)?.[1] ?? null;
}

type Incarnation = { n: number; daemon: ReturnType<typeof spawnDaemon>; mcp: Client; killed: boolean };

t.test('kill -9 at random moments of 200 sends: none delivered twice, none lost', async (t) => {
  t.comment(
    `seed ${SEED} (replay with OUTBOX_KILL9_SEED=${SEED}); ${SENDS} sends${Number.isFinite(SEND_BUDGET_MS) ? ` (as many as begin within ${SEND_BUDGET_MS / 1000} s)` : ''}, at least ${MIN_KILLS} kills`,
  );
  const random = seededRandom(SEED ^ 0x5eed);
  const plan = plans(SEED);
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());

  // The SMTP server outlives every daemon: a 450 once, a 451 once and the slow answers are its memory.
  const deferred = new Set<string>();
  const smtp = await startSmtpServer({
    security: 'StartTls',
    auth: SMTP_LOGIN,
    port: await reservePort(),
    rcpt: (address) => {
      if (address.startsWith('gone')) return { code: 550, message: 'No such user' };
      if (address.startsWith('busy') && !deferred.has(address)) {
        deferred.add(address);
        return { code: 450, message: 'Mailbox busy, try later' };
      }
      return 'accept';
    },
    data: (tx) => {
      const tmp = tx.recipients.find((r) => r.startsWith('tmp'));
      if (tmp && !deferred.has(tmp)) {
        deferred.add(tmp);
        return { code: 451, message: 'Local error, try later' };
      }
      const slow = Number(/^slow(\d+)@/.exec(tx.recipients.find((r) => r.startsWith('slow')) ?? '')?.[1]);
      // Kept at the final dot (a kill before the 250 leaves it delivered) or only once answered (then not).
      if (!Number.isNaN(slow)) return { acceptAfterMs: 300 + ((slow * 137) % 900), keptAt: slow % 2 === 0 ? 'dot' : 'answer' };
      return 'accept';
    },
  });
  t.teardown(() => smtp.stop());

  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const database = join(dir, 'mailcairn.db');
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'agent-kill9', SecretReference: file('mcp.key', KEY), Lifetime: 'NoLimit' } }],
      RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
    },
    MailSynchronization: { Interval: '01:00:00' },
    // Retries a second after a 4xx (doubled per attempt); a session longer than any slow answer.
    Outbox: { RetryDelay: '00:00:01', SendTimeout: '00:00:05' },
    Accounts: [
      {
        Id: 'ann',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'ann', Password: file('imap.password', 'pw-ann') },
        Smtp: {
          Host: '127.0.0.1',
          Port: smtp.port,
          Security: 'StartTls',
          Username: SMTP_LOGIN.username,
          Password: file('smtp.password', SMTP_LOGIN.password),
          ...(smtp.certificatePem ? { TrustedCertificate: file('smtp.ca.pem', smtp.certificatePem) } : {}),
          From: SENDER,
        },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });

  // ------------------------------------------------------------ incarnations
  const live = new Set<Incarnation>();
  t.teardown(async () => {
    for (const i of live) {
      i.daemon.child.kill('SIGKILL');
      await i.daemon.exited;
    }
  });
  let incarnations = 0;
  let current: Incarnation | null = null;
  let arrived: (() => void) | null = null;
  let nextArrival = new Promise<void>((r) => (arrived = r));
  const startMs: number[] = [];

  const daemonEntry = await compiledDaemon();
  const spawnIncarnation = (): Incarnation => {
    const daemon = spawnDaemon(['--config', config], { compiled: daemonEntry });
    const incarnation: Incarnation = { n: ++incarnations, daemon, mcp: new Client({ name: 'outbox-kill9', version: '1.0.0' }), killed: false };
    live.add(incarnation);
    return incarnation;
  };
  /** Until the incarnation answers on MCP; then the callers use it. */
  const answering = async (incarnation: Incarnation, began: number): Promise<void> => {
    const { daemon } = incarnation;
    const port = await listenerPort(daemon, 'McpEndpoint', 60_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${daemon.stderr().slice(-2_000)} ${daemon.stdout().slice(-2_000)}`);
    });
    await eventually('service.ready', () => daemon.lines().some((l) => l.event === 'service.ready') || daemon.child.exitCode !== null, 60_000);
    if (daemon.child.exitCode !== null) throw new Error(`mailcairnd exited: ${daemon.stderr()}`);
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    await incarnation.mcp.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    startMs.push(Date.now() - began);
    current = incarnation;
    arrived!();
  };
  const start = async (): Promise<Incarnation> => {
    const incarnation = spawnIncarnation();
    await answering(incarnation, Date.now());
    return incarnation;
  };
  /** Warnings and errors every incarnation logged, by event. */
  const warnings = new Map<string, number>();
  const tally = (i: Incarnation): void => {
    for (const l of i.daemon.lines())
      if (typeof l.level === 'number' && l.level >= 40) {
        const name = `${l.event}${l.actor ? ` ${l.actor}` : ''}${l.code ? ` ${l.code}` : ''}${l.reason ? ` ${l.reason}` : ''}`;
        warnings.set(name, (warnings.get(name) ?? 0) + 1);
      }
  };
  const kill = async (i: Incarnation): Promise<void> => {
    i.killed = true;
    if (current === i) {
      current = null;
      nextArrival = new Promise<void>((r) => (arrived = r));
    }
    i.daemon.child.kill('SIGKILL');
    const ended = await i.daemon.exited;
    live.delete(i);
    tally(i);
    if (ended.signal !== 'SIGKILL') t.fail(`incarnation ${i.n} ended by itself before its kill (${JSON.stringify(ended)}): ${i.daemon.stderr().slice(-2_000)}`);
    // Rejects the calls still waiting on it: they are asked again on the next incarnation.
    await i.mcp.close().catch(() => {});
  };

  // ------------------------------------------------------------ the caller
  const callErrors: string[] = [];
  let callsCut = 0;
  /** One tool call, asked again (same arguments, same key) on the next incarnation when a kill cuts it. */
  const call = async (name: string, args: Json): Promise<{ ok: boolean; value: Json; text: string }> => {
    for (;;) {
      while (current === null) await nextArrival;
      const i: Incarnation = current;
      try {
        const result = (await i.mcp.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as CallToolResult;
        const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
        return { ok: result.isError !== true, value: (result.structuredContent ?? {}) as Json, text };
      } catch (err) {
        if (i.killed) {
          callsCut += 1;
          continue;
        }
        callErrors.push(`${name} on a live daemon (incarnation ${i.n}): ${(err as Error).message}`);
        await sleep(200);
      }
    }
  };

  const acknowledged = new Map<string, string>(); // idempotencyKey → outgoingEmailId
  const refusedCalls: string[] = [];
  const cancels = { asked: 0, accepted: new Set<string>(), statePassed: 0 };
  let kills = 0;
  const sendOne = async (i: number): Promise<void> => {
    const p = plan[i]!;
    const key = `kill9-send-${i}`;
    const args = { account: 'ann', to: p.to, subject: `Kill nine send ${i} (${p.kind})`, plainTextBody: `Body of send ${i}.\n`, idempotencyKey: key };
    for (;;) {
      const r = await call('send_email', args);
      if (r.ok) {
        acknowledged.set(key, r.value.outgoingEmailId);
        break;
      }
      // Every refusal is a finding. A key conflict or not-found ends this send; anything else is asked again.
      refusedCalls.push(`${key}: ${r.text}`);
      if (/^Mailcairn error 5(1005|3001):/.test(r.text)) return;
      await sleep(200);
    }
    if (p.cancel) {
      // Held back by its 450 for a second: often still Recorded, sometimes already past.
      await sleep(200 + random.next() * 900);
      cancels.asked += 1;
      const id = acknowledged.get(key)!;
      const c = await call('cancel_outgoing_email', { outgoingEmailId: id });
      if (c.ok) cancels.accepted.add(id);
      else if (/^Mailcairn error 58001: /.test(c.text)) cancels.statePassed += 1;
      else refusedCalls.push(`cancel ${id}: ${c.text}`);
    }
  };
  let next = 0;
  let phaseStarted = Date.now();
  const sending = (): boolean => next < SENDS && (next < MIN_SENDS || Date.now() - phaseStarted < SEND_BUDGET_MS);
  const worker = async (): Promise<void> => {
    for (;;) {
      while (sending() && next >= (kills + 1) * PER_INCARNATION) await sleep(20);
      if (!sending()) return;
      const i = next++;
      await sendOne(i);
      await sleep(random.next() * 250);
    }
  };

  // ------------------------------------------------------------ where kills land
  const query = <T = Json>(sql: string, params: unknown[] = []): T[] => {
    const db = new Libsql(database, { readonly: true, timeout: 5_000 });
    try {
      return db.prepare(sql).all(params) as T[];
    } finally {
      db.close();
    }
  };
  const landed = { atStart: 0, aimed: 0, idle: 0, attemptBeforeBody: 0, bodyBegunNow: 0 };
  let begunBefore = 0;

  phaseStarted = Date.now();
  const workers = Array.from({ length: WORKERS }, worker);
  let allSent = false;
  void Promise.all(workers).then(() => (allSent = true));
  while (kills < MIN_KILLS || !allSent) {
    if (Date.now() - phaseStarted > KILL_PHASE_LIMIT_MS)
      throw new Error(`kill phase over ${KILL_PHASE_LIMIT_MS} ms: ${kills} kills, ${acknowledged.size} of ${next} sends acknowledged`);
    const incarnation = spawnIncarnation();
    if (random.next() < EARLY_SHARE) {
      // Killed while it starts: its outbox releases the claims and delivers what is due before anyone can call.
      await eventually(
        'the outbox to start',
        () => incarnation.daemon.lines().some((l) => l.event === 'actor.start' && l.actor === 'outbox') || incarnation.daemon.child.exitCode !== null,
        60_000,
      );
      await sleep(random.next() * 400);
      landed.atStart += 1;
    } else {
      await answering(incarnation, Date.now());
      if (random.next() < AIMED_SHARE) {
        const [connections, data] = [smtp.connections, smtp.dataCommands];
        const atData = random.next() < 0.5;
        const until = Date.now() + LIFE_MS[1];
        while (Date.now() < until && (atData ? smtp.dataCommands === data : smtp.connections === connections)) await sleep(2);
        await sleep(random.next() * 30);
        landed.aimed += 1;
      } else await sleep(LIFE_MS[0] + random.next() * (LIFE_MS[1] - LIFE_MS[0]));
    }
    await kill(incarnation);
    kills += 1;
    // The database as the kill left it.
    const [claimed] = query<{ n: number }>("SELECT count(*) AS n FROM outgoing_emails WHERE stage = 'Recorded' AND claimed_at IS NOT NULL");
    const [bodyBegun] = query<{ n: number }>("SELECT count(*) AS n FROM outgoing_emails WHERE stage = 'TransmissionBegun'");
    if (claimed!.n > 0) landed.attemptBeforeBody += 1;
    if (bodyBegun!.n > begunBefore) landed.bodyBegunNow += 1;
    if (claimed!.n === 0 && bodyBegun!.n === begunBefore) landed.idle += 1;
    begunBefore = bodyBegun!.n;
  }
  const phaseMs = Date.now() - phaseStarted;

  // ------------------------------------------------------------ the end: a daemon left running until nothing is owed
  const lastStarted = Date.now();
  const last = await start();
  // Nothing Recorded, and no body begun by this daemon still waiting for its answer (bounded by SendTimeout).
  const settledRows = await eventually(
    'no send Recorded, and no attempt of the last daemon under way',
    () => {
      const open = query<{ n: number }>(
        `SELECT count(*) AS n FROM outgoing_emails
         WHERE stage = 'Recorded' OR (stage = 'TransmissionBegun' AND body_began_at >= ? AND body_began_at > ? - 6000)`,
        [lastStarted, Date.now()],
      )[0]!.n;
      return open === 0 ? true : null;
    },
    60_000,
  ).catch((err: Error) => {
    t.comment(JSON.stringify(query("SELECT id, stage, claimed_at, attempt_count, due_at, failure_code FROM outgoing_emails WHERE stage = 'Recorded'")));
    throw err;
  });
  t.ok(settledRows, 'nothing left Recorded');
  // A slow answer kept only once answered, owed to a daemon that is gone, is never kept: wait the longest one out.
  await sleep(1_200);

  const rows = query<{ id: number; idempotency_key: string; message_id: string; stage: string; attempt_count: number; failure_code: string | null }>(
    'SELECT id, idempotency_key, message_id, stage, attempt_count, failure_code FROM outgoing_emails ORDER BY id',
  );
  const recipients = query<{ outgoing_id: number; address: string; state: string; reply_code: number | null }>(
    'SELECT outgoing_id, address, state, reply_code FROM outgoing_recipients ORDER BY outgoing_id, position',
  );
  const byOutgoing = new Map<number, typeof recipients>();
  for (const r of recipients) byOutgoing.set(r.outgoing_id, [...(byOutgoing.get(r.outgoing_id) ?? []), r]);

  // Deliveries by Message-ID and recipient.
  const delivered = new Map<string, Map<string, number>>();
  const unknownDeliveries: Delivery[] = [];
  const knownIds = new Set(rows.map((r) => r.message_id));
  for (const d of smtp.deliveries) {
    const id = messageIdOf(d.raw);
    if (id === null || !knownIds.has(id)) {
      unknownDeliveries.push(d);
      continue;
    }
    const perRecipient = delivered.get(id) ?? new Map<string, number>();
    for (const r of d.recipients) perRecipient.set(r.toLowerCase(), (perRecipient.get(r.toLowerCase()) ?? 0) + 1);
    delivered.set(id, perRecipient);
  }
  const duplicates: string[] = [];
  for (const [id, perRecipient] of delivered) for (const [r, n] of perRecipient) if (n > 1) duplicates.push(`${id} to ${r}: ${n} times`);

  // Every send: its stage, and what its recipients received.
  const stages = new Map<string, number>();
  const lost: string[] = [];
  const wrong: string[] = [];
  const begunDelivered = { delivered: 0, notDelivered: 0, partly: 0 };
  /** Accepted recipients who never received their send (lost), and deliveries that should not have been made (duplicated). */
  const undelivered = { accepted: 0 };
  const unwanted = { deliveries: 0 };
  for (const row of rows) {
    stages.set(row.stage, (stages.get(row.stage) ?? 0) + 1);
    const got = delivered.get(row.message_id) ?? new Map<string, number>();
    const rs = byOutgoing.get(row.id) ?? [];
    const received = (address: string): number => got.get(address.toLowerCase()) ?? 0;
    const name = `o${row.id} (${row.idempotency_key}, ${plan[Number(row.idempotency_key.split('-').at(-1))]?.kind})`;
    for (const address of got.keys())
      if (!rs.some((r) => r.address.toLowerCase() === address)) {
        wrong.push(`${name}: delivered to ${address}, not one of its recipients`);
        unwanted.deliveries += 1;
      }
    switch (row.stage) {
      case 'Sent':
      case 'Refused':
        for (const r of rs) {
          if (r.state === 'accepted' && received(r.address) !== 1)
            wrong.push(`${name} ${row.stage}: ${r.address} accepted, received ${received(r.address)} times`);
          if (r.state === 'accepted' && received(r.address) === 0) undelivered.accepted += 1;
          if (r.state !== 'accepted' && received(r.address) !== 0) {
            wrong.push(`${name} ${row.stage}: ${r.address} ${r.state}, yet received it`);
            unwanted.deliveries += 1;
          }
        }
        if (row.stage === 'Sent' && rs.some((r) => r.state === 'pending')) wrong.push(`${name} Sent with a recipient still pending`);
        break;
      case 'Cancelled':
        if (got.size > 0) {
          wrong.push(`${name} Cancelled, yet delivered`);
          unwanted.deliveries += got.size;
        }
        break;
      case 'TransmissionBegun': {
        for (const r of rs)
          if (r.state === 'accepted' && received(r.address) !== 1) {
            wrong.push(`${name} TransmissionBegun: ${r.address} accepted earlier, received ${received(r.address)} times`);
            if (received(r.address) === 0) undelivered.accepted += 1;
          }
        const owed = rs.filter((r) => r.state === 'pending');
        const arrived = owed.filter((r) => received(r.address) > 0).length;
        if (arrived === owed.length && owed.length > 0) begunDelivered.delivered += 1;
        else if (arrived === 0) begunDelivered.notDelivered += 1;
        else begunDelivered.partly += 1;
        break;
      }
      default:
        lost.push(`${name}: ${row.stage}`);
    }
  }

  // Every send the caller was told about is recorded, once per key, and nothing else is.
  const byKey = new Map<string, typeof rows>();
  for (const row of rows) byKey.set(row.idempotency_key, [...(byKey.get(row.idempotency_key) ?? []), row]);
  const missing = [...acknowledged].filter(([key, id]) => !byKey.get(key)?.some((r) => `o${r.id}` === id));
  const twice = [...byKey].filter(([, rs]) => rs.length > 1).map(([key]) => key);
  const unasked = rows.filter((r) => !acknowledged.has(r.idempotency_key)).map((r) => r.idempotency_key);
  const cancelledWrongly = [...cancels.accepted].filter((id) => rows.find((r) => `o${r.id}` === id)?.stage !== 'Cancelled');

  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  t.comment(
    `seed ${SEED}: ${kills} kills in ${Math.round(phaseMs / 1000)} s (incarnations started in ${Math.round(sum(startMs) / startMs.length)} ms on average)`,
  );
  t.comment(
    `sends: ${next} asked, ${acknowledged.size} acknowledged, ${rows.length} recorded; ${callsCut} calls cut by a kill and asked again; cancels ${cancels.asked} asked, ${cancels.accepted.size} accepted, ${cancels.statePassed} too late`,
  );
  t.comment(`stages: ${['Sent', 'Refused', 'Cancelled', 'TransmissionBegun', 'Recorded'].map((s) => `${s} ${stages.get(s) ?? 0}`).join(', ')}`);
  t.comment(
    `kills landed: ${landed.atStart} while starting, ${landed.aimed} aimed at an SMTP connection or DATA; ${landed.attemptBeforeBody} with an attempt claimed before its body, ${landed.bodyBegunNow} leaving a body begun, ${landed.idle} with nothing under way`,
  );
  t.comment(
    `deliveries: ${smtp.deliveries.length} (${smtp.dataCommands} DATA, ${smtp.connections} connections, ${smtp.refusedRecipients} recipients refused at RCPT), duplicates ${duplicates.length}`,
  );
  t.comment(
    `TransmissionBegun: ${begunDelivered.delivered} delivered, ${begunDelivered.notDelivered} not delivered, ${begunDelivered.partly} partly (awaiting the operator)`,
  );

  t.comment(`warnings and errors logged: ${[...warnings].map(([k, v]) => `${k} ×${v}`).join('; ') || 'none'}`);
  t.same(
    [...warnings.keys()].filter((k) => /^(outbox\.attempt-threw|outbox\.filing-threw|actor\.(exit|give-up|hang))/.test(k)),
    [],
    'no actor crashed or gave up, no attempt threw',
  );
  t.same(callErrors, [], 'no call failed on a live daemon');
  t.same(refusedCalls, [], 'no send or cancel refused');
  reportKills(
    t,
    {
      actor: 'outbox',
      kills,
      lost: lost.length + undelivered.accepted + missing.length,
      duplicated: duplicates.length + unwanted.deliveries + unknownDeliveries.length + twice.length + unasked.length,
    },
    MIN_KILLS,
  );
  t.equal(acknowledged.size, next, 'every send begun was acknowledged in the end');
  t.ok(next >= MIN_SENDS, `sends made (${next})`);
  t.same(duplicates, [], 'zero duplicates: no Message-ID delivered twice to one recipient');
  t.same(lost, [], 'zero lost: every recorded send Sent, Refused, Cancelled or TransmissionBegun');
  t.same(wrong, [], "every send's recipients received what its stage says");
  t.same(missing, [], 'every acknowledged send is recorded under its key');
  t.same(twice, [], 'one record per key');
  t.same(unasked, [], 'no record the caller did not ask for');
  t.same(cancelledWrongly, [], 'every acknowledged cancellation is Cancelled');
  t.same(
    unknownDeliveries.map((d) => d.recipients.join(',')),
    [],
    'no delivery of an unknown message',
  );
  t.ok((stages.get('Sent') ?? 0) > next / 2, 'most sends were sent');
  await kill(last);
});
