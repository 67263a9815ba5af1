/**
 * excerpt-parity: the JS excerpts of actors/mail-query/excerpt.ts against
 * FTS5's own `snippet()` on the search-engine database (generated mail), and
 * the tokenizer's folding against unicode61 (remove_diacritics 2) character
 * by character. Prints counts of agreement; BENCH_SHOW=1 prints the first
 * disagreements (generated text only).
 *
 *   npx tsc -p tsconfig.bench.json && BENCH_MESSAGES=10000 node dist/bench/excerpt-parity.js
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Libsql from 'libsql';
import { excerpt, phraseOf } from '../actors/mail-query/excerpt.ts';
import { compileTerms } from '../actors/mail-query/query-syntax.ts';
import { migrations } from '../runtime/store/migrations/index.ts';

const total = Number(process.env.BENCH_MESSAGES ?? 10_000);
const show = process.env.BENCH_SHOW === '1';
const database = join(tmpdir(), `mailcairn-search-engine-${total}-v${migrations.length}.db`);

function foldParity(): void {
  const db = new Libsql(':memory:');
  db.exec("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')");
  db.exec("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')");
  const ranges = [
    [0xc0, 0x24f],
    [0x300, 0x3ff],
    [0x400, 0x4ff],
    [0x1e00, 0x1eff],
    [0x2000, 0x2bff],
    [0x3000, 0x30ff],
    [0x1f300, 0x1faff],
  ];
  let same = 0;
  const differ: string[] = [];
  const insert = db.prepare('INSERT INTO t (rowid, x) VALUES (?, ?)');
  for (const [lo, hi] of ranges) for (let c = lo!; c <= hi!; c++) insert.run([c, `a${String.fromCodePoint(c)}b`]);
  const rows = db.prepare("SELECT doc, group_concat(term, ' ') AS terms FROM v GROUP BY doc").all() as Array<{ doc: number; terms: string }>;
  const sqlite = new Map(rows.map((r) => [r.doc, r.terms]));
  for (const [lo, hi] of ranges) {
    for (let c = lo!; c <= hi!; c++) {
      const text = `a${String.fromCodePoint(c)}b`;
      const tokens = phraseOf(text, false)?.tokens.join(' ') ?? '';
      // Symbols assigned after SQLite's Unicode tables are token characters there (unassigned): not compared.
      if (!/[\p{L}\p{N}]/u.test(String.fromCodePoint(c))) continue;
      if ((sqlite.get(c) ?? '') === tokens) same++;
      else differ.push(`U+${c.toString(16)} ${String.fromCodePoint(c)}: sqlite ${sqlite.get(c)} js ${tokens}`);
    }
  }
  console.log(`fold: ${same} letters and digits agree, ${differ.length} differ`);
  if (show) console.log(differ.slice(0, 200).join('\n'));
}

function snippetParity(): void {
  const db = new Libsql(database, { readonly: true });
  const queries = ['thanks', 'quarterly report', '"quarterly report"', 'repo*', 'thanks OR meeting', 'invoice', 'the', 'please -thanks', 'pdf'];
  for (const query of queries) {
    const terms = compileTerms(query);
    const expression = terms.excluded === null ? terms.positive : `(${terms.positive}) NOT (${terms.excluded})`;
    const phrases = terms.matched.flatMap((t) => phraseOf(t.text, t.prefix) ?? []);
    const rows = db
      .prepare(
        `SELECT snippet(search_index, 3, '**', '**', '…', 12) AS body, snippet(search_index, 4, '**', '**', '…', 8) AS names,
          c.body_text, c.attachment_names FROM search_index JOIN search_content c ON c.key = search_index.rowid
          WHERE search_index MATCH ? ORDER BY search_index.rowid DESC LIMIT 2000`,
      )
      .all([expression]) as Array<{ body: string; names: string; body_text: string; attachment_names: string }>;
    let same = 0;
    const differ: string[] = [];
    for (const row of rows) {
      for (const [fts, text, n] of [
        [row.body, row.body_text, 12],
        [row.names, row.attachment_names, 8],
      ] as const) {
        const expected = fts.includes('**') ? fts : null;
        const got = excerpt(text, phrases, n);
        if (got === expected) same++;
        else differ.push(`fts ${JSON.stringify(expected)}\njs  ${JSON.stringify(got)}`);
      }
    }
    console.log(`${JSON.stringify(query)}: ${same} excerpts agree, ${differ.length} differ`);
    if (show) console.log(differ.slice(0, 3).join('\n'));
  }
  db.close();
}

foldParity();
snippetParity();
