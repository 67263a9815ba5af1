/**
 * contacts: what the contact book costs (issue 29, docs/contacts.md).
 *
 *  1. The initial mirror with collection on and off
 *     (`MailSynchronization:CollectContacts`), same mailbox, each on fresh
 *     state: the compiled daemon as a one-shot process (sync-sides.ts
 *     `mailcairnOnce`: spawn → every message stored and derived and its run
 *     ended → SIGTERM → exit), CPU seconds (user + system) and peak RSS from
 *     the kernel (wait4). The sides take turns: repetition i runs collection
 *     on first when i is even, off first when it is odd (AB BA AB …);
 *     BENCH_REPEAT pairs (default 3), medians figure by figure. Goal: on ≤
 *     1.03× off in CPU seconds. Under a shared machine's load one mirror's
 *     CPU seconds move by more than 3% from run to run, so:
 * 1b. collection's own work in this process: the same mailbox parsed
 *     first (not timed), then `correspondentsOf` + the store's `collect` in
 *     transactions of 64 messages (the writer's segments) on a fresh file
 *     database; this process's CPU over that work alone, as a share of the
 *     daemon's median mirror without collection.
 *  2. Prefix lookup over BENCH_CONTACTS contacts (default 20,000; a fifth
 *     asserted with one to three addresses, the rest collected), as
 *     `list_contacts` asks it: the store's `listContacts` with a name or
 *     address prefix of one to four characters, a page of 50, in this
 *     process on a file database (WAL) — not through /mcp, which is not
 *     measured here. p50 and p99 over BENCH_LOOKUPS lookups (default 2,000)
 *     after 200 unmeasured ones. Goal (issue 29, stated for /mcp): p99 ≤ 20 ms.
 *
 * Mailbox: BENCH_MESSAGES generated messages in INBOX (default 10,000,
 * `bench` profile ≈ 63 KB average, with its mailing lists and newsletters)
 * and a tenth as many sent messages in Sent (the owner writing to one to
 * three people, with Cc), both folders mirrored.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Libsql from 'libsql';
import { startDovecot, type Dovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { DOMAINS, FIRST_NAMES, LAST_NAMES } from '../../test/harness/generator-words.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { type CorrespondentHeaders, correspondentsOf, type FolderRole, ownAddressesOf } from '../../actors/derivation/collect-correspondents.ts';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { seededRandom } from '../../runtime/clock.ts';
import { type Correspondent, collect, createAsserted, listContacts } from '../../runtime/store/contacts/book.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { openStore } from '../../runtime/store/open.ts';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { reservePort } from '../../test/helpers/ports.ts';
import { apiKeyEntry, benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';
import { boundGoal, mebibytes, millis, ratioGoal } from '../goals.ts';
import type { Row, Scenario } from '../scenario.ts';
import { median, round, summarize } from '../stats.ts';
import { type DaemonConfig, mailcairnOnce, PASSWORD, USER } from './sync-sides.ts';

/** The generator's owner: the sent mail is theirs, and the account's sender address (never collected). */
const OWNER = { name: 'Alice Example', address: 'alice@example.org' };
const PAGE = 50;
const WARM_UP = 200;

type Side = { cpuMs: number; wallMs: number; peakRssMiB: number; collected: number };

function people(seed: number): () => { name: string; address: string } {
  const random = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random.next() * xs.length)]!;
  return () => {
    const first = pick(FIRST_NAMES);
    const last = pick(LAST_NAMES);
    const n = Math.floor(random.next() * 100);
    return { name: `${first} ${last}`, address: `${first}.${last}${n}@${pick(DOMAINS)}`.toLowerCase() };
  };
}

/** The owner's sent mail: plain text to one to three people, Cc to none to two. */
function* sentMail(count: number): Generator<{ raw: Buffer }> {
  const person = people(4242);
  const random = seededRandom(99);
  const few = (n: number) => Array.from({ length: n }, () => person()).map((p) => `${p.name} <${p.address}>`);
  for (let i = 0; i < count; i++) {
    const to = few(1 + Math.floor(random.next() * 3));
    const cc = few(Math.floor(random.next() * 3));
    const body = 'Thanks for the notes, see you on Friday.\r\n'.repeat(20 + Math.floor(random.next() * 60));
    const head = [
      `From: ${OWNER.name} <${OWNER.address}>`,
      `To: ${to.join(', ')}`,
      ...(cc.length > 0 ? [`Cc: ${cc.join(', ')}`] : []),
      `Subject: Re: plans ${i}`,
      `Date: ${new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toUTCString().replace('GMT', '+0000')}`,
      `Message-ID: <sent-${i}@example.org>`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
    ];
    yield { raw: Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`) };
  }
}

function daemonConfig(dir: string, dovecot: Dovecot, collectContacts: boolean): DaemonConfig {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pw'), PASSWORD);
  return writeBenchConfig(dir, {
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Interval: '00:00:10', CollectContacts: collectContacts },
    Accounts: [
      {
        Id: 'bench',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(dir, 'pw')}` },
        // The owner's address, so their own mail is not collected; nothing is sent.
        Smtp: { Host: '127.0.0.1', Port: 2525, Security: 'None', Username: USER, From: OWNER.address },
        Folders: [{ Alias: 'inbox' }, { Alias: 'sent' }],
      },
    ],
  });
}

function collectedIn(database: string): number {
  const db = new Libsql(database, { readonly: true });
  try {
    return Number((db.prepare("SELECT count(*) AS n FROM contacts WHERE origin = 'collected'").get() as { n: number }).n);
  } finally {
    db.close();
  }
}

/**
 * Collection's own work, in this process: the mailbox's messages parsed
 * first (not timed), then who each makes a contact (`correspondentsOf`) and
 * the store's `collect`, in transactions of 64 messages as the derivation
 * writer's segments, on a fresh file database. CPU of this process over
 * that work alone (nothing else runs meanwhile).
 */
function collectionWork(dir: string, count: number, sentCount: number): { cpuMs: number; messages: number; collected: number } {
  const parsed: Array<{ role: FolderRole; headers: CorrespondentHeaders }> = [];
  const keep = (raw: Buffer, role: FolderRole): void => {
    const reply = parseMessage(raw, 'bench');
    if (reply.ok) {
      const { from, to, cc, bcc, bulk } = reply.message;
      parsed.push({ role, headers: { from, to, cc, bcc, bulk } });
    }
  };
  for (const m of generateMailbox({ seed: 42, count, profile: 'bench', owner: OWNER })) keep(m.raw, 'received');
  for (const m of sentMail(sentCount)) keep(m.raw, 'sent');
  const db = openStore({ database: join(dir, 'collection.db'), busyTimeoutMs: 5_000, synchronous: 'Normal' });
  try {
    migrate(db);
    const own = ownAddressesOf([OWNER.address]);
    const now = Date.now();
    let collected = 0;
    const cpu = process.cpuUsage();
    for (let i = 0; i < parsed.length; i += 64) {
      const segment = parsed.slice(i, i + 64);
      db.transaction(() => {
        for (const m of segment) {
          const found = correspondentsOf(m.headers, m.role, own);
          if (found.length > 0) collected += collect(db, found, now);
        }
      })();
    }
    const used = process.cpuUsage(cpu);
    return { cpuMs: (used.user + used.system) / 1000, messages: parsed.length, collected };
  } finally {
    db.close();
  }
}

/** A book of `count` contacts: a fifth asserted (one to three addresses), the rest collected. */
function fillBook(database: string, count: number): void {
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  try {
    migrate(db);
    const person = people(2929);
    const random = seededRandom(7);
    const now = Date.now();
    // Asserted ones one by one (each its own transaction, as the actor writes them); collected ones in batches, as a segment does.
    let made = 0;
    let batch: Correspondent[] = [];
    const flush = (): void => {
      made += db.transaction(() => collect(db, batch, now))();
      batch = [];
    };
    while (made + batch.length < count) {
      const p = person();
      if ((made + batch.length) % 5 === 0) {
        flush();
        const extra = Math.floor(random.next() * 3);
        const addresses = [p.address, ...Array.from({ length: extra }, (_, k) => p.address.replace('@', `+${k}@`))];
        createAsserted(db, { name: p.name, addresses: addresses.map((address, k) => ({ address, preferred: k === 0 })), note: null }, now);
        made += 1;
      } else {
        batch.push({ address: p.address, name: random.next() < 0.8 ? p.name : null });
      }
    }
    flush();
  } finally {
    db.close();
  }
}

/** Prefix lookups as `list_contacts` asks them: a page of 50 names or addresses starting with 1–4 characters. */
function prefixLookups(database: string, lookups: number): { name: ReturnType<typeof summarize>; address: ReturnType<typeof summarize>; held: number } {
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  try {
    const held = Number((db.prepare('SELECT count(*) AS n FROM contacts').get() as { n: number }).n);
    const measure = (list: string[]): ReturnType<typeof summarize> => {
      const samples: number[] = [];
      const started = performance.now();
      list.forEach((prefix, i) => {
        const t0 = performance.now();
        listContacts(db, { limit: PAGE, prefix });
        if (i >= WARM_UP) samples.push(performance.now() - t0);
      });
      return summarize(samples, performance.now() - started);
    };
    return { name: measure(lookupPrefixes('name', lookups + WARM_UP)), address: measure(lookupPrefixes('address', lookups + WARM_UP)), held };
  } finally {
    db.close();
  }
}

/** The prefixes a lookup run asks: names or addresses of the book's people, cut to 1–4 characters. */
function lookupPrefixes(kind: 'name' | 'address', count: number): string[] {
  const random = seededRandom(kind === 'name' ? 13 : 17);
  const person = people(2929);
  return Array.from({ length: count }, () => {
    const p = person();
    const text = kind === 'name' ? p.name : p.address;
    return text.slice(0, 1 + Math.floor(random.next() * 4));
  });
}

/**
 * The same lookups as an agent makes them: `list_contacts` through `/mcp`
 * of a daemon serving the filled book (the official SDK client, one call at
 * a time, a page of 50).
 */
async function mcpLookups(
  dir: string,
  database: string,
  lookups: number,
): Promise<{ name: ReturnType<typeof summarize>; address: ReturnType<typeof summarize> }> {
  const apiKey = `mc_${randomBytes(24).toString('base64url')}`;
  const keyFile = join(dir, 'agent.key');
  writeFileSync(keyFile, apiKey);
  const port = await reservePort();
  mkdirSync(join(dir, 'mcp'), { recursive: true });
  const { config } = writeBenchConfig(join(dir, 'mcp'), {
    McpEndpoint: benchMcpEndpoint(port, [apiKeyEntry('agent', `file:${keyFile}`)]),
    Storage: { Database: database },
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Enabled: false },
  });
  const daemon = startBenchDaemon({ config, output: 'stderr' });
  const client = new Client({ name: 'bench-contacts', version: '1.0.0' });
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    for (let started = performance.now(); ; ) {
      if (!daemon.alive()) throw new Error(`mailcairnd ${daemon.state()}: ${daemon.logTail(40)}`);
      const ready = await fetch(new URL('/readyz', url)).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (performance.now() - started > 60_000) throw new Error('mailcairnd not ready within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
    const measure = async (list: string[]): Promise<ReturnType<typeof summarize>> => {
      const samples: number[] = [];
      const started = performance.now();
      for (const [i, query] of list.entries()) {
        const t0 = performance.now();
        const result = await client.callTool({ name: 'list_contacts', arguments: { query, pageSize: PAGE } });
        if (result.isError) throw new Error('list_contacts refused a lookup');
        if (i >= WARM_UP) samples.push(performance.now() - t0);
      }
      return summarize(samples, performance.now() - started);
    };
    return { name: await measure(lookupPrefixes('name', lookups + WARM_UP)), address: await measure(lookupPrefixes('address', lookups + WARM_UP)) };
  } finally {
    await client.close().catch(() => undefined);
    await daemon.stop();
  }
}

export const contacts: Scenario = {
  name: 'contacts',
  description: 'the initial mirror with contact collection on and off (CPU-s, alternating); list_contacts-style prefix lookup over 20,000 contacts',
  async run() {
    const repeat = Math.max(1, Number(process.env.BENCH_REPEAT ?? '3'));
    const count = Number(process.env.BENCH_MESSAGES ?? '10000');
    if (!Number.isInteger(count) || count < 100) throw new Error('BENCH_MESSAGES must be a whole number ≥ 100');
    const sentCount = Math.floor(count / 10);
    const bookSize = Number(process.env.BENCH_CONTACTS ?? '20000');
    const lookups = Number(process.env.BENCH_LOOKUPS ?? '2000');
    const log = (line: string): void => void process.stderr.write(`[contacts] ${line}\n`);
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-contacts-'));
    const rows: Row[] = [];
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    try {
      const inbox = await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 42, count, profile: 'bench', owner: OWNER }));
      const sent = await writeMaildir(dovecot, USER, 'Sent', sentMail(sentCount));
      const total = inbox + sent;

      // 1. The initial mirror, collection on and off in turn.
      const sides = { on: [] as Side[], off: [] as Side[] };
      const order: string[] = [];
      for (let i = 0; i < repeat; i++) {
        const once = async (on: boolean): Promise<void> => {
          const side = on ? 'on' : 'off';
          log(`initial mirror ${i + 1}/${repeat}, collection ${side}`);
          const repDir = join(dir, `${side}-${i}`);
          const daemon = daemonConfig(repDir, dovecot, on);
          const measured = await mailcairnOnce(daemon, { stored: total });
          sides[side].push({ cpuMs: measured.cpuMs, wallMs: measured.wallMs, peakRssMiB: measured.peakRssMiB, collected: collectedIn(daemon.database) });
          rmSync(repDir, { recursive: true, force: true });
        };
        const onFirst = i % 2 === 0;
        await once(onFirst);
        await once(!onFirst);
        order.push(onFirst ? 'NF' : 'FN');
      }
      const figure = (side: 'on' | 'off'): Row => {
        const s = sides[side];
        return {
          part: `initial mirror, collection ${side}`,
          messages: `${inbox} inbox + ${sent} sent`,
          order: order.join(' '),
          'CPU s (median)': round(median(s.map((x) => x.cpuMs)) / 1000, 2),
          'CPU s (each)': s.map((x) => round(x.cpuMs / 1000, 2)).join(' / '),
          'wall s (median)': round(median(s.map((x) => x.wallMs)) / 1000, 2),
          'peak MiB (median)': round(median(s.map((x) => x.peakRssMiB))),
          'contacts collected': s.map((x) => x.collected).join(' / '),
        };
      };
      rows.push(figure('on'), figure('off'));
      const cpuOn = median(sides.on.map((x) => x.cpuMs));
      const cpuOff = median(sides.off.map((x) => x.cpuMs));

      // 1b. Collection's own CPU, in process: what collection adds to a mirror, without the mirror's noise.
      log('collection alone, in process');
      const work = collectionWork(dir, count, sentCount);
      rows.push({
        part: 'collection alone (correspondentsOf + collect, segments of 64), in process',
        messages: work.messages,
        'CPU s (median)': round(work.cpuMs / 1000, 3),
        'µs per message': round((work.cpuMs * 1000) / work.messages),
        'contacts collected': work.collected,
        'share of the mirror (on, median)': `${round((work.cpuMs / median(sides.on.map((x) => x.cpuMs))) * 100, 2)}%`,
      });

      // 2. Prefix lookup over a book of bookSize contacts.
      log(`prefix lookups over ${bookSize} contacts`);
      const database = join(dir, 'book.db');
      fillBook(database, bookSize);
      const lookup = prefixLookups(database, lookups);
      for (const [kind, s] of [
        ['name', lookup.name],
        ['address', lookup.address],
      ] as const) {
        rows.push({
          part: `listContacts, ${kind} prefix of 1–4 characters, page of ${PAGE} (in process)`,
          contacts: lookup.held,
          lookups: s.count,
          'p50 ms': round(s.p50Us / 1000, 3),
          'p99 ms': round(s.p99Us / 1000, 3),
          'per second': s.perSecond,
        });
      }

      // 3. The same lookups through /mcp, as an agent makes them.
      log(`list_contacts through /mcp over ${lookup.held} contacts`);
      const viaMcp = await mcpLookups(dir, database, lookups);
      for (const [kind, s] of [
        ['name', viaMcp.name],
        ['address', viaMcp.address],
      ] as const) {
        rows.push({
          part: `list_contacts through /mcp, ${kind} prefix of 1–4 characters, page of ${PAGE}`,
          contacts: lookup.held,
          lookups: s.count,
          'p50 ms': round(s.p50Us / 1000, 3),
          'p99 ms': round(s.p99Us / 1000, 3),
          'per second': s.perSecond,
        });
      }

      const cpu = (ms: number): string => `${(ms / 1000).toFixed(2)} CPU-s`;
      rows.push(
        ratioGoal(`initial mirror CPU with collection ≤ 1.03× without (${inbox} + ${sent} messages)`, cpuOn, cpuOff, 1.03, cpu),
        boundGoal(
          "collection's own CPU ≤ 3% of the mirror's without it (in process, beside the daemon's median)",
          (work.cpuMs / cpuOff) * 100,
          3,
          (n) => `${n.toFixed(2)}%`,
        ),
        boundGoal(
          'initial mirror peak RSS with collection (no goal of its own; off beside it)',
          median(sides.on.map((x) => x.peakRssMiB)),
          Infinity,
          mebibytes,
          median(sides.off.map((x) => x.peakRssMiB)),
        ),
        boundGoal(`list_contacts p99 ≤ 20 ms over ${lookup.held} contacts through /mcp, name prefix`, viaMcp.name.p99Us / 1000, 20, millis),
        boundGoal(`list_contacts p99 ≤ 20 ms over ${lookup.held} contacts through /mcp, address prefix`, viaMcp.address.p99Us / 1000, 20, millis),
        boundGoal(
          `prefix lookup p99 ≤ 20 ms over ${lookup.held} contacts, name prefix (in process; the goal is stated through /mcp)`,
          lookup.name.p99Us / 1000,
          20,
          millis,
        ),
        boundGoal(
          `prefix lookup p99 ≤ 20 ms over ${lookup.held} contacts, address prefix (in process; the goal is stated through /mcp)`,
          lookup.address.p99Us / 1000,
          20,
          millis,
        ),
      );
    } finally {
      await dovecot.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
