/**
 * The network and the server misbehaving mid-run, through the fault proxy:
 * connections cut mid-answer, answers stalled, latency; and Dovecot itself
 * stopped and restarted during a run. Each run that meets a fault is
 * deferred (server-unresponsive), the delay grows from consecutive failures,
 * and once the faults end the mirror converges on the server.
 */
import t, { type Test } from 'tap';
import { seededRandom } from '../../../runtime/clock.ts';
import type { SynchronizationStatus } from '../../../runtime/store/mailbox/status.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { startFaultProxy } from '../../harness/fault-proxy.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { readMirror } from '../../helpers/mirror.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const fastFailure = {
  MailSynchronization: {
    BatchSize: 25,
    Interval: '00:00:10',
    CommandTimeout: '00:00:02',
    ConnectTimeout: '00:00:02',
    Backoff: { Initial: '00:00:01', Maximum: '00:00:03' },
  },
};

type Observed = { maxFailures: number; outcomes: Set<string> };

function observe(sync: SyncService, account: string): { stop(): Observed } {
  const seen: Observed = { maxFailures: 0, outcomes: new Set() };
  const timer = setInterval(() => {
    sync.status().then(
      (s: SynchronizationStatus) => {
        const entry = s.accounts.find((a) => a.account === account);
        if (!entry) return;
        seen.maxFailures = Math.max(seen.maxFailures, entry.consecutiveFailureCount);
        for (const f of entry.folders) if (f.lastRun) seen.outcomes.add(f.lastRun.outcome);
      },
      () => {},
    );
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return seen;
    },
  };
}

async function converge(
  t: Test,
  sync: SyncService,
  dovecotFetch: () => Promise<Array<{ uid: number; flags: string[]; sha256: string }>>,
  account: string,
  alias: string,
): Promise<void> {
  const server = (await dovecotFetch()).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
  const deadline = Date.now() + 120_000;
  let mirror = readMirror(sync.database, account, alias);
  while (JSON.stringify(mirror) !== JSON.stringify(server) && Date.now() < deadline) {
    await sync.syncNow(account, 60_000).catch(() => undefined);
    mirror = readMirror(sync.database, account, alias);
  }
  t.same(mirror, server, 'the mirror converged on the server: same UIDs, flags and content');
}

t.test('cuts, stalls and latency mid-run: runs defer, back off, and converge', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'fay', password: 'pw-fay' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'fay', 'INBOX', generateMailbox({ seed: 5, count: 3_000, profile: 'small' }));
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port }, { seed: 11 });
  t.teardown(() => proxy.close());
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'fay', user: 'fay', port: proxy.port, folders: [{ Alias: 'inbox' }] }], fastFailure);
  t.teardown(() => sync.service.stop());
  const watching = observe(sync, 'fay');

  const random = seededRandom(7);
  // At least 12 s of chaos, and on until two connections were cut (a loaded machine mirrors slower, so
  // fewer cut windows meet traffic), within a bound.
  const started = Date.now();
  while (Date.now() - started < 12_000 || (proxy.cuts < 2 && Date.now() - started < 60_000)) {
    const pick = random.next();
    if (pick < 0.4) {
      // Every connection, open or new, is cut somewhere in its next answers for a while.
      proxy.cutAfterBytes(1_000 + Math.floor(random.next() * 200_000), { which: 'all', reset: random.next() < 0.5 });
      await new Promise((r) => setTimeout(r, 1_500));
      proxy.clearCut();
    } else if (pick < 0.7) {
      proxy.stallAfterBytes(Math.floor(random.next() * 50_000), { which: 'open' });
      await new Promise((r) => setTimeout(r, 2_500));
      proxy.resume();
    } else {
      proxy.delay(30, 20);
      await new Promise((r) => setTimeout(r, 500));
      proxy.delay(0);
    }
    await new Promise((r) => setTimeout(r, 300 + Math.floor(random.next() * 500)));
  }
  proxy.clearCut();
  proxy.resume();
  proxy.delay(0);
  const seen = watching.stop();
  t.ok(proxy.cuts >= 2, `the proxy cut ${proxy.cuts} connections`);
  t.ok(seen.outcomes.has('server-unresponsive'), 'faulty runs were reported as deferred after the server stopped answering');
  t.ok(seen.maxFailures >= 1, `consecutive failures counted (up to ${seen.maxFailures}); the delay grew from them`);
  await converge(t, sync, () => mailAdmin(dovecot).fetchAll('fay', 'INBOX'), 'fay', 'inbox');
  t.equal(sync.logs.events('actor.exit').length, 0, 'faults on the wire never crashed the actor');
  // The actor's own lines (its thread's) are captured too, so the privacy scans see them.
  const failed = sync.logs.events('sync.run-failed', undefined);
  t.ok(
    failed.length > 0 && failed.every((l) => l.reason === 'E_IMAP_UNRESPONSIVE' || l.reason === 'E_IMAP_PROTOCOL'),
    'failed runs logged by the account thread, by code only',
  );
});

t.test('Dovecot stopped mid-run and restarted: deferred, growing backoff, recovery', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'dan', password: 'pw-dan' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, 'dan', 'INBOX', generateMailbox({ seed: 6, count: 1_500, profile: 'small' }));
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => proxy.close());
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'dan', user: 'dan', port: proxy.port, folders: [{ Alias: 'inbox' }] }], fastFailure);
  t.teardown(() => sync.service.stop());
  const watching = observe(sync, 'dan');
  while (readMirror(sync.database, 'dan', 'inbox').length < 100) await new Promise((r) => setTimeout(r, 20));

  // The server goes away mid-run: the proxy refuses new connections while Dovecot itself is stopped and started again.
  proxy.refuse(true);
  proxy.cutAll({ reset: true });
  await dovecot.restart();
  await new Promise((r) => setTimeout(r, 6_000));
  const down = await sync.status();
  const seen = watching.stop();
  t.ok(seen.outcomes.has('server-unresponsive'), 'the run was deferred after the server stopped answering');
  t.ok(seen.maxFailures >= 2, `the delay grew from consecutive failed runs (${seen.maxFailures})`);
  t.equal(down.accounts[0]?.phase === 'running' || down.accounts[0]?.phase === 'waiting', true, 'the account waits out its delay or retries');
  proxy.refuse(false);
  await converge(t, sync, () => mailAdmin(dovecot).fetchAll('dan', 'INBOX'), 'dan', 'inbox');
  const after = await sync.status();
  t.equal(after.accounts[0]?.consecutiveFailureCount, 0, 'a successful run resets the backoff');
});
