/**
 * Search excerpts made in JS: matched terms found as the index's tokenizer
 * finds them (case and diacritics folded, prefixes, phrases as one span),
 * the window cut to the token budget with `…`, no excerpt without a match.
 * bench/excerpt-parity.ts checks the same against FTS5's snippet() at scale.
 */
import t from 'tap';
import { excerpt, phraseOf, type Phrase } from '../../../actors/mail-query/excerpt.ts';

const terms = (...texts: string[]): Phrase[] => texts.map((text) => phraseOf(text.replace(/\*$/, ''), text.endsWith('*'))!);

t.test('case and diacritics fold on both sides', async (t) => {
  t.equal(excerpt('Réunion à Genève mardi.', terms('reunion'), 12), '**Réunion** à Genève mardi.');
  t.equal(excerpt('see you in GENEVE', terms('genève'), 12), 'see you in **GENEVE**');
  t.same(phraseOf('Crème Brûlée', false)?.tokens, ['creme', 'brulee']);
  t.same(phraseOf('Søren', false)?.tokens, ['søren'], 'a letter Unicode does not decompose keeps its form, as in the index');
});

t.test('a prefix matches the start of a token only', async (t) => {
  t.equal(excerpt('Some budgeting advice.', terms('budg*'), 12), 'Some **budgeting** advice.');
  t.equal(excerpt('No overbudget here.', terms('budg*'), 12), null);
});

t.test('a phrase is marked as one span, and only where its tokens are adjacent', async (t) => {
  t.equal(excerpt('invoice-2025.pdf', terms('invoice 2025'), 8), '**invoice-2025**.pdf');
  t.equal(excerpt('invoice for 2025', terms('invoice 2025'), 8), null);
});

t.test('a long text is cut to the token budget around the match', async (t) => {
  const text = `${'Filler words here. '.repeat(20)}The hotel was fine, thanks. ${'More filler after. '.repeat(20)}`;
  const cut = excerpt(text, terms('hotel'), 12)!;
  t.match(cut, /^….*\*\*hotel\*\*.*…$/s);
  t.ok(cut.split(/\s+/).length <= 14, cut);
  t.equal(excerpt('short text with a match', terms('match'), 12), 'short text with a **match**', 'whole when it fits');
});

t.test('no excerpt when no term is in the text', async (t) => {
  t.equal(excerpt('Nothing relevant here at all.', terms('hotel'), 12), null);
  t.equal(excerpt('', terms('hotel'), 12), null);
  t.equal(phraseOf('--', false), null, 'a term without letters or digits is no phrase');
});
