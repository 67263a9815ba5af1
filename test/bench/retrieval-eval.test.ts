/**
 * The labelled retrieval evaluation set (bench/fixtures/retrieval-eval.json, docs/semantic-search.md
 * "Evaluation set") is well-formed and its labels hold: enough queries of each kind, every real
 * message it names is in the shared corpus with the recorded SHA-256, every generated one is made
 * by the generator, a paraphrase shares no content word with any message it labels relevant, a
 * keyword or constrained query's words occur in a relevant message, and every relevant message
 * passes the query's filters. Parses only the messages the set names.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { contentWords, type EvalFilters, type EvalQuery, loadEvalSet, sharedContentWords, stem } from '../../bench/retrieval-eval.ts';
import { corpusAvailable, corpusDir, readManifest, withoutEnvelope } from '../harness/corpus.ts';
import { generateMailbox } from '../harness/generator.ts';

const set = loadEvalSet();
const queries = set.queries;
const byKind = (kind: EvalQuery['kind']) => queries.filter((q) => q.kind === kind);

/** What the evaluation compares a query with: the subject and body as the product parses them, the sender addresses, the received instant. */
type Target = { text: string; senders: string[]; receivedAt: number | null };

function targetOf(raw: Uint8Array, receivedAt: number | null): Target {
  const r = parseMessage(raw, 'retrieval-eval');
  if (!r.ok) throw new Error(`unreadable: ${r.reason}`);
  const m = r.message;
  return { text: `${m.subject ?? ''}\n${m.bodyText}`, senders: m.from.map((a) => a.address.toLowerCase()), receivedAt: receivedAt ?? m.sentAt };
}

/** Exact lower-case tokens, split as the full-text index's unicode61 tokenizer splits (letters and digits). */
const tokens = (text: string) =>
  new Set(
    text
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w !== ''),
  );

function failedFilter(target: Target, f: EvalFilters | undefined): string | null {
  if (!f) return null;
  if (f.senderAddress) {
    const want = f.senderAddress.toLowerCase();
    if (!target.senders.some((a) => (want.startsWith('@') ? a.endsWith(want) : a === want))) return `sender ${target.senders.join(',')} is not ${want}`;
  }
  if (f.receivedOnOrAfter || f.receivedBefore) {
    if (target.receivedAt === null) return 'no received instant';
    if (f.receivedOnOrAfter && target.receivedAt < Date.parse(f.receivedOnOrAfter))
      return `received ${new Date(target.receivedAt).toISOString()} before ${f.receivedOnOrAfter}`;
    if (f.receivedBefore && target.receivedAt >= Date.parse(f.receivedBefore))
      return `received ${new Date(target.receivedAt).toISOString()} not before ${f.receivedBefore}`;
  }
  return null;
}

/** The label checks shared by real and generated references, for one query and the targets of its relevant messages. */
function checkLabels(t: Test, q: EvalQuery, targets: Array<{ ref: string; target: Target }>) {
  if (q.kind === 'paraphrase') {
    for (const { ref, target } of targets) t.same(sharedContentWords(q.query, target.text), [], `${q.id}: shares no content word with ${ref}`);
  }
  for (const { ref, target } of targets) t.equal(failedFilter(target, q.filters), null, `${q.id}: ${ref} passes the filters`);
}

t.test('the tokenizer of the content-word rule', async (t) => {
  t.equal(stem('invoices'), stem('invoice'), 'plural -s/-es');
  t.equal(stem('meeting'), stem('meets'), '-ing and -s');
  t.equal(stem('dated'), stem('date'), '-ed');
  t.equal(stem('running'), stem('run'), 'doubled consonant');
  t.equal(stem('deliveries'), stem('delivery'), '-ies');
  t.same([...contentWords('The unpaid Invoices of an IT team, 2024!')], ['unpaid', 'invoic', 'team', '2024'], 'lower case, stop words and short words dropped');
  t.same(sharedContentWords('bill still outstanding', 'Re: unpaid invoice'), [], 'a paraphrase shares nothing');
  t.same(sharedContentWords('unpaid invoices', 'The invoice is unpaid.'), ['unpaid', 'invoic'], 'inflections count as shared');
});

t.test('the set has the shape and the counts issue 15 asks for', async (t) => {
  t.ok(queries.length >= 100, `at least 100 queries (${queries.length})`);
  const ids = queries.map((q) => q.id);
  t.equal(new Set(ids).size, ids.length, 'query ids are unique');
  t.ok(byKind('paraphrase').length >= 30, `at least 30 paraphrase queries (${byKind('paraphrase').length})`);
  t.ok(byKind('keyword').length >= 25, `at least 25 keyword queries (${byKind('keyword').length})`);
  t.ok(byKind('constrained').length >= 15, `at least 15 constrained queries (${byKind('constrained').length})`);
  t.ok(byKind('none').length >= 10, `at least 10 queries with no relevant message (${byKind('none').length})`);
  const overGenerated = queries.filter((q) => q.relevant.some((r) => r.corpus === 'generated'));
  t.ok(overGenerated.length >= 10, `at least 10 queries over generated mail (${overGenerated.length})`);
  for (const q of queries) {
    if (q.kind === 'none') t.same(q.relevant, [], `${q.id}: no relevant message`);
    else t.ok(q.relevant.length > 0, `${q.id}: at least one relevant message`);
    if (q.kind === 'constrained') t.ok(q.filters && Object.keys(q.filters).length > 0, `${q.id}: has a filter`);
    if (q.kind === 'paraphrase' || q.kind === 'keyword') t.notOk(q.filters, `${q.id}: no filter (filters make a query constrained)`);
    const keys = q.relevant.map((r) => (r.corpus === 'real' ? r.path : `${r.mailbox}/${r.messageId}`));
    t.equal(new Set(keys).size, keys.length, `${q.id}: no message listed twice`);
    if (q.filters?.receivedOnOrAfter && q.filters.receivedBefore)
      t.ok(Date.parse(q.filters.receivedOnOrAfter) < Date.parse(q.filters.receivedBefore), `${q.id}: the date range is not empty`);
    if (q.kind === 'keyword' || q.kind === 'constrained') t.ok(contentWords(q.query).size > 0, `${q.id}: has a content word`);
  }
  for (const q of queries)
    for (const r of q.relevant) if (r.corpus === 'generated') t.ok(set.generated[r.mailbox], `${q.id}: mailbox ${r.mailbox} is declared`);
});

t.test('every generated reference resolves, and its labels hold', async (t) => {
  for (const [name, mailbox] of Object.entries(set.generated)) {
    const wanted = new Set(queries.flatMap((q) => q.relevant.flatMap((r) => (r.corpus === 'generated' && r.mailbox === name ? [r.messageId] : []))));
    const targets = new Map<string, Target>();
    for (const m of generateMailbox({ seed: mailbox.seed, count: mailbox.count, profile: mailbox.profile }))
      if (wanted.has(m.messageId)) targets.set(m.messageId, targetOf(m.raw, m.internalDate.getTime()));
    t.same(
      [...wanted].filter((id) => !targets.has(id)),
      [],
      `every Message-ID named in ${name} is generated (seed ${mailbox.seed}, ${mailbox.count} messages)`,
    );
    for (const q of queries) {
      const mine = q.relevant.flatMap((r) => (r.corpus === 'generated' && r.mailbox === name && targets.has(r.messageId) ? [r.messageId] : []));
      if (mine.length === 0) continue;
      checkLabels(
        t,
        q,
        mine.map((id) => ({ ref: `${name}/${id}`, target: targets.get(id)! })),
      );
    }
  }
});

t.test(
  'every real reference is in the corpus with its recorded SHA-256, and its labels hold',
  { skip: !corpusAvailable() && 'the shared corpus is not present' },
  async (t) => {
    const manifest = new Map(readManifest().map((row) => [row.path!, row.sha256!]));
    const targets = new Map<string, Target>();
    for (const q of queries)
      for (const r of q.relevant) {
        if (r.corpus !== 'real' || targets.has(r.path)) continue;
        const path = join(corpusDir(), 'real', r.path);
        t.equal(manifest.get(`real/${r.path}`), r.sha256, `${r.path}: MANIFEST.tsv records the SHA-256 the set gives`);
        if (!existsSync(path)) {
          t.fail(`${r.path}: the file exists`);
          continue;
        }
        const raw = readFileSync(path);
        t.equal(createHash('sha256').update(raw).digest('hex'), r.sha256, `${r.path}: the file has the recorded SHA-256`);
        targets.set(r.path, targetOf(withoutEnvelope(raw), null));
      }
    for (const q of queries) {
      const mine = q.relevant.flatMap((r) => (r.corpus === 'real' && targets.has(r.path) ? [{ ref: r.path, target: targets.get(r.path)! }] : []));
      if (mine.length > 0) checkLabels(t, q, mine);
    }
  },
);

t.test("a keyword or constrained query's words occur in a message it labels relevant", async (t) => {
  const generated = new Map<string, Map<string, Set<string>>>();
  for (const [name, mailbox] of Object.entries(set.generated)) {
    const m = new Map<string, Set<string>>();
    for (const g of generateMailbox({ seed: mailbox.seed, count: mailbox.count, profile: mailbox.profile }))
      m.set(g.messageId, tokens(targetOf(g.raw, g.internalDate.getTime()).text));
    generated.set(name, m);
  }
  for (const q of queries.filter((q) => q.kind === 'keyword' || q.kind === 'constrained')) {
    if (!corpusAvailable() && q.relevant.some((r) => r.corpus === 'real')) continue; // the shared corpus is not present
    const want = [...tokens(q.query)];
    const held = q.relevant.map((r) =>
      r.corpus === 'real'
        ? tokens(targetOf(withoutEnvelope(readFileSync(join(corpusDir(), 'real', r.path))), null).text)
        : (generated.get(r.mailbox)?.get(r.messageId) ?? new Set<string>()),
    );
    const best = held.map((words) => want.filter((w) => !words.has(w)));
    best.sort((a, b) => a.length - b.length);
    t.same(best[0] ?? want, [], `${q.id}: every word of "${q.query}" is in one relevant message`);
  }
});
