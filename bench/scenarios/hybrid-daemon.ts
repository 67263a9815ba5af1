/**
 * A bench daemon that searches both ways: search.ts's compiled daemon with
 * an admin endpoint (activation and status) and an embedding profile, then
 * the activation, the wait for the backfill, and the warm-up while the pool
 * threads load their vector index. Imported by search-hybrid.ts and ask.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { EmbeddingStandin } from '../../test/harness/embedding-standin.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { apiKeyEntry } from '../peers/daemon-config.ts';
import { round } from '../stats.ts';
import { callTool, type Daemon, startDaemon } from './search.ts';

/** Vector length of the embedding stand-in's profile. */
export const STANDIN_DIMENSIONS = 384;
/** The bench operator's admin key: activation and status (`Authorization: Bearer`). */
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const ADMIN_PERMISSIONS = ['service.admin.spend', 'service.admin.read'];
const WARMUP_ROUNDS = 3;
const WARMUP_SEARCHES = 20;
const WARMUP_PAUSE_MS = 3_000;

export type Admin = { get(path: string): Promise<Record<string, unknown>>; post(path: string): Promise<Record<string, unknown>> };

function adminClient(port: number): Admin {
  const call = async (method: string, path: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`http://127.0.0.1:${port}/api/admin${path}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_KEY}`, ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    const json = (await res.json()) as Record<string, unknown>;
    // The status and the problem's title only: a problem names no mail, but the body is not echoed.
    if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${String(json.title ?? '')}`);
    return json;
  };
  return { get: (path) => call('GET', path), post: (path) => call('POST', path) };
}

/**
 * The `Embeddings` section with the stand-in as provider. Characters are
 * counted against a budget: 50,000 messages need more than the default 10 million.
 */
export function standinEmbeddings(standin: EmbeddingStandin): Record<string, unknown> {
  return {
    BaseAddress: standin.baseAddress,
    Model: 'bench-bow',
    Dimensions: STANDIN_DIMENSIONS,
    BatchSize: 256,
    MaxInputCharactersPerPeriod: 100_000_000_000,
  };
}

/**
 * The compiled daemon (search.ts's `startDaemon`) with an admin endpoint and
 * `sections` (which must hold `Embeddings`), mirroring `folders` (default the
 * INBOX); the backfill runs in large batches.
 */
export async function startHybridDaemon(
  dir: string,
  imapPort: number,
  sections: Record<string, unknown>,
  folders?: readonly string[],
): Promise<{ daemon: Daemon; admin: Admin }> {
  mkdirSync(dir, { recursive: true });
  const adminKeyFile = join(dir, 'admin.key');
  writeFileSync(adminKeyFile, ADMIN_KEY);
  const adminPort = await reservePort();
  const daemon = await startDaemon(
    dir,
    imapPort,
    {
      EmbeddingBackfill: { BatchSize: 2000 },
      AdminEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: adminPort,
        Authentication: [{ ...apiKeyEntry('bench-admin', `file:${adminKeyFile}`), Permissions: ADMIN_PERMISSIONS }],
      },
      ...sections,
    },
    folders === undefined ? {} : { folders },
  );
  return { daemon, admin: adminClient(adminPort) };
}

export type Embedded = { embedMs: number; outcome: string; passages: string; embeddedEmailCount: number; emailCount: number };

/**
 * `POST /api/admin/embeddings/activation`, then polls the status until every
 * stored email is embedded (progress through `log`, bounded by `limitMs`).
 * The stand-in's request log is emptied as it goes: it records every input.
 */
export async function activateAndEmbed(
  admin: Admin,
  d: Daemon,
  standin: EmbeddingStandin | null,
  limitMs: number,
  log: (line: string) => void,
): Promise<Embedded> {
  const activated = await admin.post('/embeddings/activation');
  const outcome = String(activated.outcome);
  log(`activation: ${outcome}`);
  const started = performance.now();
  let lastLog = 0;
  for (;;) {
    if (d.state() !== 'running') throw new Error(`mailcairnd ${d.state()} while embedding`);
    const status = await admin.get('/embeddings');
    const serving = status.serving as { embeddedEmailCount: number; emailCount: number } | null;
    if (standin !== null) standin.requests.length = 0;
    const elapsed = performance.now() - started;
    if (serving !== null && serving.emailCount > 0 && serving.embeddedEmailCount >= serving.emailCount) {
      log(`embedded ${serving.embeddedEmailCount}/${serving.emailCount} in ${round(elapsed / 1000, 1)} s`);
      const passages = String((activated.forecast as { passages?: number } | undefined)?.passages ?? '?');
      return { embedMs: elapsed, outcome, passages, ...serving };
    }
    if (elapsed - lastLog >= 15_000) {
      lastLog = elapsed;
      log(
        `embedding: ${serving ? `${serving.embeddedEmailCount}/${serving.emailCount}` : 'not serving yet'} after ${round(elapsed / 1000)} s; waiting for ${String(status.waitingFor ?? 'nothing')}`,
      );
    }
    if (elapsed > limitMs) throw new Error(`not every email embedded within ${limitMs / 60_000} min`);
    await sleep(2_000);
  }
}

/**
 * Until its in-memory vector index is loaded, a pool thread answers by the
 * exact scan (the load runs in the background): three rounds of 20 searches
 * (`args` in turn), each followed by a 3 s pause, before anything is timed.
 */
export async function warmUpVectorIndex(client: Client, args: ReadonlyArray<Record<string, unknown>>, log: (line: string) => void): Promise<void> {
  log(`warm-up: ${WARMUP_ROUNDS} × (${WARMUP_SEARCHES} searches, ${WARMUP_PAUSE_MS / 1000} s pause) while the pool threads load their vector index`);
  for (let r = 0; r < WARMUP_ROUNDS; r++) {
    for (let i = 0; i < WARMUP_SEARCHES; i++) await callTool(client, 'search_emails', args[i % args.length]!);
    await sleep(WARMUP_PAUSE_MS);
  }
}
