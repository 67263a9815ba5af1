/**
 * The mailboxes the mirror and search scenarios run on (BENCH_CORPUS,
 * comma-separated, default `bench,realistic`; BENCH_MESSAGES generated
 * messages each): `bench` (generator.ts's `bench` profile, all in the
 * INBOX), `realistic` (issue 34's measured shape, generator-shape.ts, over
 * INBOX, Archive and Sent), `real` (every message of the shared corpus).
 */
import { loadCorpus, withoutEnvelope } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';

/** A mailbox to mirror: its messages made as they are written (never held whole), each in its folder (default INBOX). */
export type Corpus = {
  label: string;
  count: number;
  folders: readonly string[];
  messages: () => Iterable<{ raw: Buffer; flags?: string[]; internalDate?: Date; folder?: string }>;
};

const CORPORA = ['bench', 'realistic', 'real'] as const;

/**
 * The mailboxes BENCH_CORPUS names, comma-separated, in that order (default `bench,realistic`):
 * `bench` and `realistic` are generated at BENCH_MESSAGES (generator.ts profiles; realistic is
 * issue 34's shape over INBOX, Archive and Sent), `real` is every message of the shared corpus.
 */
export function benchCorpora(): Corpus[] {
  const names = (process.env.BENCH_CORPUS ?? 'bench,realistic').split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !(CORPORA as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) throw new Error(`BENCH_CORPUS names ${CORPORA.join(', ')}, comma-separated`);
  const count = Number(process.env.BENCH_MESSAGES ?? '10000');
  if (!Number.isInteger(count) || count < 100) throw new Error('BENCH_MESSAGES must be a whole number ≥ 100');
  return names.map((name): Corpus => {
    if (name === 'real') {
      const real = loadCorpus('real').map((m) => ({ raw: withoutEnvelope(m.raw) }));
      return { label: 'corpus real/', count: real.length, folders: ['INBOX'], messages: () => real };
    }
    if (name === 'realistic')
      return {
        label: 'generated, realistic',
        count,
        folders: ['INBOX', 'Archive', 'Sent'],
        messages: () => generateMailbox({ seed: 42, count, profile: 'realistic' }),
      };
    return { label: 'generated', count, folders: ['INBOX'], messages: () => generateMailbox({ seed: 42, count, profile: 'bench' }) };
  });
}
