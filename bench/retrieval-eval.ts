/**
 * The labelled retrieval evaluation set of issue 15 (docs/semantic-search.md, "Evaluation set"):
 * its schema, its loader, and the content-word rule that tells a paraphrase query from a keyword
 * one. The data is `bench/fixtures/retrieval-eval.json`; `test/bench/retrieval-eval.test.ts`
 * checks every label against the corpus and the generator. Pure: reads only the JSON file.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** Same shape and names as `search_emails`' filters (docs/mcp-tools.md). */
const Instant = z.iso.datetime({ offset: true });
const Address = z
  .string()
  .max(320)
  .regex(/^[^\s@]*@[^\s@]+$/);

export const EvalFilters = z.strictObject({
  senderAddress: Address.optional(),
  receivedOnOrAfter: Instant.optional(),
  receivedBefore: Instant.optional(),
});
export type EvalFilters = z.infer<typeof EvalFilters>;

/** A message of `corpus/real/`: its path under `real/` and the SHA-256 MANIFEST.tsv gives it. */
export const RealRef = z.strictObject({
  corpus: z.literal('real'),
  path: z.string().regex(/^[a-z0-9_./-]+\.eml$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
/** A generated message: the mailbox (by name, see `generated`) and the Message-ID it was given. */
export const GeneratedRef = z.strictObject({
  corpus: z.literal('generated'),
  mailbox: z.string().min(1),
  messageId: z.string().regex(/^<[^<>\s]+>$/),
});
export const EvalRef = z.discriminatedUnion('corpus', [RealRef, GeneratedRef]);
export type EvalRef = z.infer<typeof EvalRef>;

export const QUERY_KINDS = ['paraphrase', 'keyword', 'constrained', 'none'] as const;
export type QueryKind = (typeof QUERY_KINDS)[number];

export const EvalQuery = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]+$/),
  kind: z.enum(QUERY_KINDS),
  query: z.string().min(3).max(300),
  filters: EvalFilters.optional(),
  relevant: z.array(EvalRef),
  /** What the relevant messages say, for a reader checking the label (not used in scoring). */
  note: z.string().optional(),
});
export type EvalQuery = z.infer<typeof EvalQuery>;

export const EvalSet = z.strictObject({
  version: z.literal(1),
  /** Everything searched: all of `corpus/real/` plus these generated mailboxes (the `small` profile unless said). */
  generated: z.record(
    z.string(),
    z.strictObject({ seed: z.number().int(), count: z.number().int().positive(), profile: z.enum(['small', 'bench']).default('small') }),
  ),
  queries: z.array(EvalQuery),
});
export type EvalSet = z.infer<typeof EvalSet>;

/** The JSON stays in the source tree: compiled benches (dist/bench/) read it from there. */
export const EVAL_SET_FILE = new URL(
  import.meta.url.includes('/dist/') ? '../../bench/fixtures/retrieval-eval.json' : './fixtures/retrieval-eval.json',
  import.meta.url,
);

export function loadEvalSet(file: URL = EVAL_SET_FILE): EvalSet {
  return EvalSet.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** Words that carry no topic: dropped before comparing a query with a message. */
export const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other ' +
    'our ours ourselves out over own same she should so some such than that the their theirs them themselves then there ' +
    'these they this those through to too under until up very was we were what when where which while who whom why will ' +
    'with would you your yours yourself yourselves also get got one'
  ).split(' '),
);

/**
 * A crude stem, so inflections count as the same word: `invoices`/`invoice`, `meeting`/`meets`,
 * `dated`/`date`, `running`/`run` all meet. Deliberately coarse (it merges more than it should,
 * which only makes the paraphrase rule stricter).
 */
export function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length > 5 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2);
  else if (w.length > 4 && w.endsWith('es')) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  if (w.length > 3 && /([b-df-hj-km-np-tv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  return w;
}

/** The content words of a text, stemmed: lower case, split on anything but letters and digits, stop words and words under 3 letters dropped. */
export function contentWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const token of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (token.length < 3 || STOP_WORDS.has(token)) continue;
    out.add(stem(token));
  }
  return out;
}

/** The content words of `query` that also occur (stemmed) in `text`. */
export function sharedContentWords(query: string, text: string): string[] {
  const have = contentWords(text);
  return [...contentWords(query)].filter((w) => have.has(w));
}
