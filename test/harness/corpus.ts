/**
 * Loads the shared email corpus (`../shared/corpus/`, or `$MAILCAIRN_CORPUS`): every file listed
 * in its MANIFEST.tsv, byte for byte, with mbox files split into messages. Owns reading and
 * splitting only; what the messages exercise is described in the corpus's PROVENANCE.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type CorpusKind = 'real' | 'mime-torture' | 'all';

export type CorpusMessage = {
  /** Corpus-relative path; for a message cut from an mbox, `<mbox path>#<n>` (1-based). */
  name: string;
  /** Absolute path of the file it came from. */
  path: string;
  raw: Buffer;
  /** The file's MANIFEST.tsv row (sha256, eol, charsets, …), by column name. */
  traits: Record<string, string>;
};

/** Where the shared corpus is: $MAILCAIRN_CORPUS, else the repository's sibling `shared/corpus`, else the workplace's `/work/shared/corpus` (a clone elsewhere). */
export function corpusDir(): string {
  if (process.env.MAILCAIRN_CORPUS) return process.env.MAILCAIRN_CORPUS;
  const sibling = fileURLToPath(new URL('../../../shared/corpus/', import.meta.url));
  return existsSync(join(sibling, 'MANIFEST.tsv')) || !existsSync('/work/shared/corpus/MANIFEST.tsv') ? sibling : '/work/shared/corpus/';
}

export function corpusAvailable(): boolean {
  return existsSync(join(corpusDir(), 'MANIFEST.tsv'));
}

export function readManifest(): Array<Record<string, string>> {
  const file = join(corpusDir(), 'MANIFEST.tsv');
  if (!existsSync(file)) throw new Error(`no corpus at ${corpusDir()} (set MAILCAIRN_CORPUS)`);
  const [head, ...rows] = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
  const cols = head!.split('\t');
  return rows.map((row) => {
    const cells = row.split('\t');
    return Object.fromEntries(cols.map((c, i) => [c, cells[i] ?? '']));
  });
}

/**
 * An mbox envelope line: `From ` then a sender that looks like one (`-`, has `@` or ` at `) or a
 * time of day later on the line. "From Russia with love" in an unescaped body is not one.
 */
function isEnvelope(line: string): boolean {
  const m = /^From (\S+)(.*)$/.exec(line);
  if (!m) return false;
  return m[1] === '-' || m[1]!.includes('@') || /^ at /.test(m[2]!) || /\b\d{1,2}:\d{2}(:\d{2})?\b/.test(m[2]!);
}

/** Cut an mbox at its envelope lines; each piece keeps its `From ` line and trailing blank line. A leading BOM is dropped. No `>From` unescaping. */
export function splitMbox(mbox: Buffer): Buffer[] {
  const body = mbox[0] === 0xef && mbox[1] === 0xbb && mbox[2] === 0xbf ? mbox.subarray(3) : mbox;
  const starts: number[] = [];
  for (let pos = 0; pos < body.length; ) {
    let eol = body.indexOf(10, pos);
    if (eol === -1) eol = body.length;
    if (body[pos] === 0x46 /* F */ && isEnvelope(body.toString('latin1', pos, eol).replace(/\r$/, ''))) starts.push(pos);
    pos = eol + 1;
  }
  if (starts[0] !== 0) starts.unshift(0);
  return starts.map((s, i) => body.subarray(s, starts[i + 1] ?? body.length));
}

let cache: CorpusMessage[] | undefined;

function loadAll(): CorpusMessage[] {
  if (cache) return cache;
  const dir = corpusDir();
  const out: CorpusMessage[] = [];
  for (const row of readManifest()) {
    const rel = row.path!;
    const path = join(dir, rel);
    const raw = readFileSync(path);
    if (rel.endsWith('.mbox')) {
      const pieces = splitMbox(raw);
      const width = String(pieces.length).length;
      for (const [i, piece] of pieces.entries()) out.push({ name: `${rel}#${String(i + 1).padStart(width, '0')}`, path, raw: piece, traits: row });
    } else {
      out.push({ name: rel, path, raw, traits: row });
    }
  }
  cache = out;
  return out;
}

/** Every corpus message of that kind, in MANIFEST order. Buffers are shared: do not mutate them. */
export function loadCorpus(kind: CorpusKind): CorpusMessage[] {
  const all = loadAll();
  return kind === 'all' ? all.slice() : all.filter((m) => m.name.startsWith(`${kind}/`));
}

/** The message without a leading mbox `From ` envelope line, as an MTA would have delivered it. */
export function withoutEnvelope(raw: Buffer): Buffer {
  if (raw.subarray(0, 5).toString('latin1') !== 'From ') return raw;
  const eol = raw.indexOf(10);
  return eol === -1 ? Buffer.alloc(0) : raw.subarray(eol + 1);
}
