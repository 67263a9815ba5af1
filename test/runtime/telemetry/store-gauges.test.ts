/**
 * The store gauges' own behaviour, with the SDK in process and the figures
 * given: a collection reads the store once per scrape; a read that fails
 * observes nothing of the store but the lag, which keeps growing from the
 * last figures (the SDK reports the other points' last values), with one
 * warning naming its code, not one per scrape; a folder never caught up
 * has no lag point; `close` stops the reads.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { AppError } from '../../../runtime/errors.ts';
import { observeStoreGauges, type StoreFigures } from '../../../runtime/telemetry/store-gauges.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { installTelemetrySdk } from '../../helpers/telemetry-sdk.ts';

const figures: StoreFigures = {
  folders: [
    { account: 'ann', folder: 'inbox', messages: 7, unindexed: 2, caughtUpAt: 1_000_000 },
    { account: 'ann', folder: 'new', messages: 0, unindexed: 0, caughtUpAt: null },
  ],
  journal: [{ account: 'ann', state: 'pending', entries: 3 }],
  outbox: [{ account: 'ann', stage: 'Sent', sends: 4 }],
  embeddingCoverage: 0.5,
  embeddingSpent: 1234,
};

t.test('figures become points; a failing read keeps the lag growing, with one warning; close stops the reads', async (t) => {
  const sdk = installTelemetrySdk(t);
  const dir = tempDir(t);
  const file = join(dir, 'mailcairn.db');
  writeFileSync(file, Buffer.alloc(4096));
  writeFileSync(`${file}-wal`, Buffer.alloc(1000));
  const { log, lines } = captureLog();
  let reads = 0;
  let fail = false;
  let clock = 1_030_000;
  const gauges = observeStoreGauges({
    read: async () => {
      reads += 1;
      if (fail) throw new AppError('E_ACTOR_TIMEOUT');
      return figures;
    },
    file,
    log,
    now: () => clock,
  });

  const points = await sdk.points();
  t.equal(reads, 1, 'one read per collection');
  const value = (name: string, labels: Record<string, string> = {}) =>
    points.find((p) => p.name === name && Object.entries(labels).every(([k, v]) => p.attributes[k] === v))?.value;
  t.equal(value('mailcairn.mailbox.messages', { 'mailcairn.folder': 'inbox' }), 7);
  t.equal(value('mailcairn.mailbox.unindexed', { 'mailcairn.folder': 'inbox' }), 2);
  t.equal(value('mailcairn.mailbox.freshness_lag', { 'mailcairn.folder': 'inbox' }), 30, 'seconds since the folder was caught up');
  t.equal(value('mailcairn.mailbox.freshness_lag', { 'mailcairn.folder': 'new' }), undefined, 'no lag for a folder never caught up');
  t.equal(value('mailcairn.change_journal.entries', { 'mailcairn.account': 'ann', 'mailcairn.state': 'pending' }), 3);
  t.equal(value('mailcairn.outbox.sends', { 'mailcairn.account': 'ann', 'mailcairn.stage': 'Sent' }), 4);
  t.equal(value('mailcairn.embedding.coverage'), 0.5);
  t.equal(value('mailcairn.embedding.spent'), 1234);
  t.equal(value('mailcairn.store.size'), 5096, 'the file and its WAL');

  fail = true;
  clock += 60_000;
  await sdk.points();
  const failed = await sdk.points();
  const lagNow = failed.find((p) => p.name === 'mailcairn.mailbox.freshness_lag')?.value;
  t.equal(lagNow, 90, 'the lag keeps growing from the last figures read');
  t.equal(
    failed.find((p) => p.name === 'mailcairn.mailbox.messages' && p.attributes['mailcairn.folder'] === 'inbox')?.value,
    7,
    'the others keep their last value',
  );
  const warnings = lines.filter((l) => l.event === 'telemetry.store-read-failed');
  t.equal(warnings.length, 1, 'one warning for a run of failures');
  t.match(warnings[0], { level: 40, code: 'E_ACTOR_TIMEOUT' });

  gauges.close();
  const before = reads;
  await sdk.points();
  t.equal(reads, before, 'the store is not read once closed');
});
