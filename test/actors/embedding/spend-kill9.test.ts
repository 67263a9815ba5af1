/**
 * The embedding spend survives `kill -9`: a real mailcairnd embeds a
 * mailbox through the stand-in, which answers two calls and then hangs the
 * third; the daemon is killed with SIGKILL while that call is in flight. The
 * ledger already holds the hung call's characters (spent before sent), so a
 * restart can over-count one call but never under-count: after the next
 * incarnation finishes the mailbox, the period's spend is exactly every
 * character the provider was sent, hung call included, and every message
 * has its vectors once.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import t from 'tap';
import { migrate } from '../../../runtime/store/migrate.ts';
import { beginGeneration, promoteGeneration } from '../../../runtime/store/mailbox/vectors.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { compiledDaemon, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';

t.setTimeout(300_000);

const COUNT = 24;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

t.test('the spend of a call cut by kill -9 is counted, never lost', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'gus', password: 'pw-gus' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(
    dovecot,
    'gus',
    'INBOX',
    [...generateMailbox({ seed: 9, count: COUNT, profile: 'small' })].map((m) => ({ raw: m.raw })),
  );
  const standin = await startEmbeddingStandin({ dimensions: 8 });
  t.teardown(() => standin.close());
  standin.script({ kind: 'ok' }, { kind: 'ok' }, { kind: 'hang' });

  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const passwordFile = join(dir, 'gus.password');
  writeFileSync(passwordFile, 'pw-gus');
  // The operator's activation, as the admin route records it: a generation serving, reached at the stand-in.
  const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(setup);
  const generation = beginGeneration(setup, { provider: 'openai-compatible', model: 'm', dimensions: 8, distance: 'cosine' }, Date.now(), {
    baseAddress: standin.baseAddress,
    apiKeyRef: null,
  });
  promoteGeneration(setup, generation.id, Date.now());
  setup.close();
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    Embeddings: { BaseAddress: standin.baseAddress, Model: 'm', Dimensions: 8, BatchSize: 4, RequestTimeout: '00:05:00' },
    EmbeddingBackfill: { Interval: '00:10:00', BatchSize: 100 },
    Accounts: [
      {
        Id: 'gus',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: 'gus', Password: `file:${passwordFile}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const entry = await compiledDaemon();

  const first = spawnDaemon(['--config', config], { compiled: entry });
  t.teardown(() => {
    if (first.child.exitCode === null) first.child.kill('SIGKILL');
  });
  await waitFor(() => standin.requests.length === 3, 'the third call to hang');
  first.child.kill('SIGKILL');
  t.same(await first.exited, { code: null, signal: 'SIGKILL' });

  const characters = (from: number): number => standin.requests.slice(from).reduce((n, r) => n + r.inputs.reduce((m, text) => m + [...text].length, 0), 0);
  const read = (): { spent: number; embedded: number; embeddable: number } => {
    const db = new Libsql(database, { readonly: true });
    try {
      const spent = (db.prepare('SELECT coalesce(sum(characters), 0) AS n FROM embedding_spend').get() as { n: number }).n;
      const embedded = (db.prepare('SELECT count(DISTINCT message_id) AS n FROM passage_vectors WHERE generation_id = ?').get(generation.id) as { n: number })
        .n;
      const embeddable = (
        db.prepare("SELECT count(*) AS n FROM messages m WHERE m.state = 'stored' AND EXISTS (SELECT 1 FROM passages p WHERE p.message_id = m.id)").get() as {
          n: number;
        }
      ).n;
      return { spent, embedded, embeddable };
    } finally {
      db.close();
    }
  };
  const afterKill = read();
  t.equal(afterKill.spent, characters(0), "the ledger holds every call's characters, the hung one included");
  t.ok(afterKill.embedded < afterKill.embeddable, 'the kill left mail to embed');

  const sentBefore = standin.requests.length;
  const second = spawnDaemon(['--config', config], { compiled: entry });
  t.teardown(() => {
    if (second.child.exitCode === null) second.child.kill('SIGKILL');
  });
  await waitFor(() => {
    const now = read();
    return now.embeddable > 0 && now.embedded === now.embeddable;
  }, 'the mailbox embedded after the restart');
  second.child.kill('SIGTERM');
  // The mailbox may be embedded before start-up has ended: the signal then stops it at its next step, gracefully.
  t.same(await second.exited, { code: 0, signal: null }, 'the second incarnation stopped gracefully');
  t.equal(second.lines().at(-1)?.event, 'service.stopped', 'its log is whole, to the last line');
  const end = read();
  t.equal(end.spent, afterKill.spent + characters(sentBefore), 'the next incarnation added exactly what it sent: nothing was lost or counted twice');
  t.ok(
    second.lines().every((l) => l.event !== 'actor.exit' || l.reason === 'normal' || l.reason === 'shutdown'),
    'no actor crashed',
  );
});
