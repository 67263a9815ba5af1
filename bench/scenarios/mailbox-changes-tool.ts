/**
 * mailbox-changes, part "tool to server": how long from an agent's
 * `set_mail_flags` call until the mail server holds the change, against
 * the floor — the same change made by a plain imapflow client (STORE on a
 * session that already has the folder selected) — observed the same way.
 *
 * Setup: a private Dovecot with BENCH_CHANGES_MESSAGES (default 200)
 * generated messages in INBOX; a compiled daemon (dist/bin/mailcairnd.js)
 * mirrors it once, MCP on a loopback port, no credential.
 *
 * Measured, BENCH_CHANGES_SAMPLES (default 40) times per side, the sides
 * taking turns sample by sample (the order alternated): a random message's
 * `\Flagged` is toggled (each side its own half of the messages), and an observer session (its own imapflow client,
 * INBOX selected) reads that message's flags every 2 ms until the new
 * value shows. The figure is from the start of the call to the first read
 * that shows it. The Mailcairn side includes the MCP exchange, recording
 * the change in the journal, and the sync actor's writing session applying
 * it (read, STORE … UNCHANGEDSINCE, read back). The writing session is
 * warmed by a first untimed change, as the floor's client is connected
 * before timing.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ImapFlow } from 'imapflow';
import Libsql from 'libsql';
import { encodeStoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import { startDovecot, type Dovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import type { Row } from '../scenario.ts';
import { round, summarize } from '../stats.ts';
import { benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';

const USER = 'bench';
const PASSWORD = 'pw-bench';

function imapClient(dovecot: Dovecot): ImapFlow {
  return new ImapFlow({ host: '127.0.0.1', port: dovecot.port, secure: false, auth: { user: USER, pass: PASSWORD }, logger: false, qresync: true });
}

/** Reads the UID's flags every 2 ms until `\Flagged` is `wanted`; resolves when seen. */
async function observe(observer: ImapFlow, uid: number, wanted: boolean, deadlineMs = 30_000): Promise<void> {
  const until = performance.now() + deadlineMs;
  for (;;) {
    const msg = await observer.fetchOne(String(uid), { flags: true, uid: true }, { uid: true });
    if (msg && msg.flags?.has('\\Flagged') === wanted) return;
    if (performance.now() > until) throw new Error(`the change to UID ${uid} did not reach the server within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export async function toolToServerRows(): Promise<Row[]> {
  const messages = Number(process.env.BENCH_CHANGES_MESSAGES ?? 200);
  const samples = Number(process.env.BENCH_CHANGES_SAMPLES ?? 40);
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-changes-'));
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  let stopDaemon = async (): Promise<void> => {};
  let daemonLog = (): string => '';
  try {
    await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 12, count: messages, profile: 'small' }));
    const port = await reservePort();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'pw'), PASSWORD);
    const { config } = writeBenchConfig(dir, {
      McpEndpoint: benchMcpEndpoint(port),
      Logging: { Level: 'warn', Format: 'Json' },
      MailSynchronization: { Interval: '1.00:00:00' },
      Accounts: [
        {
          Id: USER,
          Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(dir, 'pw')}` },
          Folders: [{ Alias: 'inbox' }],
        },
      ],
    });
    const d = startBenchDaemon({ config, output: { logFile: join(dir, 'mailcairnd.log') } });
    daemonLog = () => d.logTail(20);
    stopDaemon = d.stop;

    const mcp = new Client({ name: 'bench-mailbox-changes', version: '1.0.0' });
    const connectUntil = Date.now() + 60_000;
    for (;;) {
      try {
        await mcp.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
        break;
      } catch (err) {
        if (Date.now() > connectUntil) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const call = async (args: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const result = (await mcp.callTool({ name: 'set_mail_flags', arguments: args })) as CallToolResult;
      if (result.isError) throw new Error(`set_mail_flags refused: ${JSON.stringify(result.structuredContent)}`);
      return result.structuredContent as Record<string, unknown>;
    };
    // Wait for the first mirror, then map UIDs to storedEmailIds from the database (read-only).
    const database = join(dir, 'mailcairn.db');
    const byUid = new Map<number, string>();
    const mirrorUntil = Date.now() + 120_000;
    while (byUid.size < messages && Date.now() < mirrorUntil) {
      await new Promise((r) => setTimeout(r, 250));
      try {
        const db = new Libsql(database, { readonly: true });
        const rows = db.prepare("SELECT id, uid FROM messages WHERE state = 'stored'").all([]) as Array<{ id: number; uid: number }>;
        db.close();
        for (const row of rows) byUid.set(row.uid, encodeStoredEmailId(row.id));
      } catch {
        // Not created yet.
      }
    }
    if (byUid.size < messages) throw new Error(`the first mirror did not finish (${byUid.size} of ${messages})`);
    const observer = imapClient(dovecot);
    const floorClient = imapClient(dovecot);
    await observer.connect();
    await floorClient.connect();
    await observer.mailboxOpen('INBOX', { readOnly: true });
    await floorClient.mailboxOpen('INBOX');
    const flagged = new Map<number, boolean>();
    // Warm the writing session (opened on demand) with one untimed change.
    const [warmUid, warmId] = [...byUid][0]!;
    await call({ storedEmailId: warmId, flagged: true });
    await observe(observer, warmUid, true);
    flagged.set(warmUid, true);

    const tool: number[] = [];
    const floor: number[] = [];
    // The Mailcairn side's answer alone (recorded durably, nothing sent yet), from the same calls.
    const answered: number[] = [];
    // Each side its own messages: a change the floor made behind the mirror's back to a message the tool
    // then changes is a conflict the server wins (docs/sync.md), not a figure of this bench.
    const rest = [...byUid.keys()].slice(1);
    const pools = { tool: rest.filter((_, i) => i % 2 === 0), floor: rest.filter((_, i) => i % 2 === 1) };
    for (let i = 0; i < samples; i++) {
      for (const side of i % 2 === 0 ? (['tool', 'floor'] as const) : (['floor', 'tool'] as const)) {
        const pool = pools[side];
        const uid = pool[Math.floor(Math.random() * pool.length)]!;
        const wanted = !(flagged.get(uid) ?? false);
        const started = performance.now();
        if (side === 'tool') {
          await call({ storedEmailId: byUid.get(uid)!, flagged: wanted });
          answered.push(performance.now() - started);
        } else
          await (wanted
            ? floorClient.messageFlagsAdd(String(uid), ['\\Flagged'], { uid: true })
            : floorClient.messageFlagsRemove(String(uid), ['\\Flagged'], { uid: true }));
        await observe(observer, uid, wanted);
        (side === 'tool' ? tool : floor).push(performance.now() - started);
        flagged.set(uid, wanted);
      }
    }
    await observer.logout();
    await floorClient.logout();
    await mcp.close();
    const t = summarize(tool, 1);
    const f = summarize(floor, 1);
    const a = summarize(answered, 1);
    return [
      {
        part: 'tool to server',
        side: 'set_mail_flags answered (recorded, not yet sent)',
        samples,
        p50Ms: round(a.p50Us / 1000),
        p99Ms: round(a.p99Us / 1000),
        ratioP50: null,
      },
      {
        part: 'tool to server',
        side: 'set_mail_flags (MCP, journal, STORE)',
        samples,
        p50Ms: round(t.p50Us / 1000),
        p99Ms: round(t.p99Us / 1000),
        ratioP50: round(t.p50Us / f.p50Us, 2),
      },
      { part: 'tool to server', side: 'floor: imapflow STORE', samples, p50Ms: round(f.p50Us / 1000), p99Ms: round(f.p99Us / 1000), ratioP50: 1 },
    ];
  } catch (err) {
    process.stderr.write(`mailcairnd's last lines:\n${daemonLog()}\n`);
    throw err;
  } finally {
    await stopDaemon();
    await dovecot.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
