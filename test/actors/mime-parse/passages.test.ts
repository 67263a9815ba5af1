/** Passages for embedding: sizes, boundaries, the cap. */
import t from 'tap';
import { passages } from '../../../actors/mime-parse/passages.ts';

// The documented bounds (docs/parsing.md "Passages" and "Bounds"), pinned here rather than read from the
// implementation, so a change to the constants fails until the documentation changes with them.
const MIN_PASSAGE_CHARS = 1_000;
const MAX_PASSAGE_CHARS = 2_000;
const MAX_PASSAGES = 64;

const sentence = (i: number): string => `Sentence number ${i} talks about the quarterly report and its figures.`;
const paragraph = (from: number, count: number): string => Array.from({ length: count }, (_, i) => sentence(from + i)).join(' ');

t.test('short bodies are one passage; blank bodies none', async (t) => {
  t.same(passages(''), []);
  t.same(passages('  \n\n  '), []);
  t.same(passages('Hello.\n\nSee you.'), ['Hello.\n\nSee you.']);
});

t.test('paragraphs are gathered up to the minimum and never past the maximum', async (t) => {
  const body = Array.from({ length: 40 }, (_, i) => paragraph(i * 5, 5)).join('\n\n');
  const out = passages(body);
  t.ok(out.length > 5);
  for (const p of out.slice(0, -1)) {
    t.ok(p.length >= MIN_PASSAGE_CHARS && p.length <= MAX_PASSAGE_CHARS, `passage of ${p.length}`);
    t.ok(p.endsWith('figures.'), 'cut at a paragraph end');
  }
  t.equal(out.join('\n\n'), body, 'nothing lost or reordered');
});

t.test('a paragraph longer than a passage is cut at sentence ends', async (t) => {
  const long = paragraph(0, 120);
  const out = passages(long);
  t.ok(out.length >= 4);
  for (const p of out) {
    t.ok(p.length <= MAX_PASSAGE_CHARS);
    t.match(p, /^Sentence number \d+ .*figures\.$/s, 'whole sentences');
  }
  const words = 'x'.repeat(5_000);
  t.same(
    passages(words).map((p) => p.length),
    [2_000, 2_000, 1_000],
    'text without breaks is cut hard',
  );
});

t.test('at most 64 passages', async (t) => {
  const huge = Array.from({ length: 2_000 }, (_, i) => paragraph(i, 15)).join('\n\n');
  t.equal(passages(huge).length, MAX_PASSAGES);
});
