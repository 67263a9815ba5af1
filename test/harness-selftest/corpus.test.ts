/**
 * The corpus loader reads every MANIFEST.tsv file byte for byte (SHA-256 checked), splits the
 * mbox files into the expected number of messages, and Dovecot accepts all of mime-torture.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { corpusAvailable, loadCorpus, readManifest, splitMbox, withoutEnvelope } from '../harness/corpus.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { mailAdmin } from '../harness/doveadm.ts';
import { writeMaildir } from '../harness/place-mail.ts';

const skip = corpusAvailable() ? false : 'no corpus next to the repository (../shared/corpus) and MAILCAIRN_CORPUS not set';
t.test('every manifest file loads with its recorded bytes', { skip }, async (t) => {
  const manifest = readManifest();
  const all = loadCorpus('all');
  const byPath = new Map<string, Buffer[]>();
  for (const m of all) {
    const file = m.name.split('#')[0]!;
    byPath.set(file, [...(byPath.get(file) ?? []), m.raw]);
  }
  t.equal(byPath.size, manifest.length, 'one or more messages per manifest row');
  let bad = 0;
  for (const row of manifest) {
    const pieces = byPath.get(row.path!) ?? [];
    const joined = Buffer.concat(pieces);
    // A split mbox loses only a leading BOM.
    const bom = row.path!.endsWith('.mbox') && Number(row.bytes) === joined.length + 3 ? 3 : 0;
    if (Number(row.bytes) !== joined.length + bom) bad++;
    else if (!bom && createHash('sha256').update(joined).digest('hex') !== row.sha256) bad++;
  }
  t.equal(bad, 0, 'sizes and SHA-256 match MANIFEST.tsv');
  t.equal(loadCorpus('real').length, 4775);
  t.equal(loadCorpus('mime-torture').length + loadCorpus('real').length, all.length);
  t.ok(all.every((m) => m.raw.length > 0));
});

t.test('mbox files split at envelope lines only', { skip }, async (t) => {
  const counts = new Map<string, number>();
  for (const m of loadCorpus('mime-torture')) {
    if (m.name.includes('.mbox#')) counts.set(m.name.split('#')[0]!.split('/').pop()!, (counts.get(m.name.split('#')[0]!.split('/').pop()!) ?? 0) + 1);
  }
  t.same(Object.fromEntries(counts), {
    'mimekit-content-length.mbox': 29,
    'mimekit-issue1189.mbox': 4,
    'mimekit-unmunged.mbox': 2,
    'perceval-complex.mbox': 2,
    'perceval-no-fields.mbox': 6,
    'perceval-unixfrom-encoding.mbox': 1,
    'perceval-unknown-encoding.mbox': 1,
    'sisimai-mbox-0.mbox': 37,
    'sisimai-mbox-1.mbox': 1,
    'spamassassin-nice.mbox': 3,
  });
  const split = splitMbox(Buffer.from('From a@b Mon Jan  1 00:00:00 2001\nSubject: x\n\nFrom Russia with love\n\nFrom - \nSubject: y\n\nz\n'));
  t.equal(split.length, 2);
  t.equal(withoutEnvelope(split[1]!).toString(), 'Subject: y\n\nz\n');
});

t.test('Dovecot accepts every mime-torture message', { skip }, async (t) => {
  const d = await startDovecot();
  t.teardown(() => d.stop());
  const messages = loadCorpus('mime-torture');
  await writeMaildir(d, 'alice', 'INBOX', messages);
  const served = await mailAdmin(d).fetchAll('alice', 'INBOX');
  t.equal(served.length, messages.length);
  t.ok(served.every((m) => m.size > 0));
});
