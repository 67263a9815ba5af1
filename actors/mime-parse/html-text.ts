/**
 * HTML reduced to readable text for search and passages, in one forward
 * scan (no DOM): comments, doctype, processing instructions and the content
 * of head, title, script, style and template are dropped; block elements
 * become line breaks (paragraph-like ones a blank line); all other tags are
 * removed and their text kept (link text without the URL, images without
 * alt text); entities are decoded; white space collapses.
 *
 * Measured against html-to-text in bench/scenarios/mime-parse.ts: it is the
 * HTML step of every HTML-only message, so it is kept small and fast.
 *
 * Private to actors/mime-parse/.
 */
import { decodeEntities } from './html-entities.ts';

/** Elements whose content is not text a reader sees. */
const DROPPED = new Set(['head', 'title', 'script', 'style', 'template', 'xml']);
/** Elements that end a paragraph: a blank line. */
const PARAGRAPH = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'table', 'ul', 'ol', 'dl', 'pre', 'hr']);
/** Elements that end a line (`br` too; two of them end a paragraph). */
const LINE = new Set([
  'div',
  'tr',
  'li',
  'dt',
  'dd',
  'section',
  'article',
  'header',
  'footer',
  'nav',
  'aside',
  'main',
  'address',
  'center',
  'form',
  'fieldset',
  'figure',
  'figcaption',
  'caption',
  'details',
  'summary',
  'option',
  'body',
  'html',
]);
/** Cells: a space keeps the words of neighbouring cells apart. */
const CELL = new Set(['td', 'th']);

function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}

function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 48 && c <= 57) || c === 45 || c === 58;
}

/**
 * Offset just past the `>` closing a tag that starts at `from`. A quote opens
 * an attribute value only right after `=` (stray quotes are text); a value
 * left unterminated falls back to the first `>`.
 */
function tagEnd(html: string, from: number): number {
  let quote = 0;
  let afterEquals = false;
  let firstGt = -1;
  for (let i = from; i < html.length; i++) {
    const c = html.charCodeAt(i);
    if (quote !== 0) {
      if (c === quote) quote = 0;
      else if (c === 62 && firstGt === -1) firstGt = i;
      continue;
    }
    if (c === 62) return i + 1;
    if ((c === 34 || c === 39) && afterEquals) quote = c;
    if (c === 61) afterEquals = true;
    else if (c !== 32 && c !== 9 && c !== 10 && c !== 13) afterEquals = false;
  }
  return firstGt === -1 ? html.length : firstGt + 1;
}

const closers = new Map<string, RegExp>();

/**
 * Offset just past `</name ...>` at or after `from`, or -1. `seen` remembers
 * each search of this document: positions only grow, so a closer found
 * further on is found again, and one missing stays missing. Without it, a
 * page of unclosed `<script>` tags would be searched to its end once each.
 */
function closingTag(html: string, name: string, from: number, seen: Map<string, [number, number]>): number {
  const last = seen.get(name);
  if (last && (last[0] === -1 || from <= last[0])) return last[1];
  let pattern = closers.get(name);
  if (!pattern) {
    pattern = new RegExp(`</${name}[\\s>]`, 'gi');
    closers.set(name, pattern);
  }
  pattern.lastIndex = from;
  const m = pattern.exec(html);
  if (!m) {
    seen.set(name, [-1, -1]);
    return -1;
  }
  const gt = html.indexOf('>', m.index);
  const end = gt === -1 ? html.length : gt + 1;
  seen.set(name, [m.index, end]);
  return end;
}

const BODY = /<body[\s>]/gi;

/** Offset of the next `<body` at or after `from`, or -1; remembered in `seen` like closers. */
function bodyStart(html: string, from: number, seen: Map<string, [number, number]>): number {
  const last = seen.get('<body');
  if (last && (last[0] === -1 || from <= last[0])) return last[0];
  BODY.lastIndex = from;
  const at = BODY.exec(html)?.index ?? -1;
  seen.set('<body', [at, at]);
  return at;
}

/**
 * The output: words of text segments with the breaks between them. Breaks
 * only accumulate until the next words, so `</li><li>` or `</div><div>` is one
 * line break and `<br><br>` (or any paragraph element) a blank line; runs of
 * white space, `&nbsp;` included, are one space.
 */
type Writer = { out: string[]; pending: number; brs: number };
const SPACE = 1;
const LINE_BREAK = 2;
const PARAGRAPH_BREAK = 3;
const SEPARATORS = ['', ' ', '\n', '\n\n'];
const WHITE = /[ \t\r\n\f\u00a0\u200b]+/g;

function words(w: Writer, segment: string): void {
  const text = (segment.includes('&') ? decodeEntities(segment) : segment).replace(WHITE, ' ');
  if (text === ' ' || text === '') {
    if (text === ' ' && w.pending < SPACE) w.pending = SPACE;
    return;
  }
  const lead = text.charCodeAt(0) === 32 ? 1 : 0;
  const trail = text.charCodeAt(text.length - 1) === 32 ? 1 : 0;
  if (lead && w.pending < SPACE) w.pending = SPACE;
  if (w.out.length > 0) w.out.push(SEPARATORS[w.pending]!);
  w.out.push(lead || trail ? text.slice(lead, text.length - trail) : text);
  w.pending = trail ? SPACE : 0;
  w.brs = 0;
}

function brk(w: Writer, level: number): void {
  if (level > w.pending) w.pending = level;
}

export function htmlToText(html: string): string {
  const w: Writer = { out: [], pending: 0, brs: 0 };
  const seen = new Map<string, [number, number]>();
  let pos = 0;
  const length = html.length;
  while (pos < length) {
    const lt = html.indexOf('<', pos);
    if (lt === -1) {
      words(w, html.slice(pos));
      break;
    }
    if (lt > pos) words(w, html.slice(pos, lt));
    const c = html.charCodeAt(lt + 1);
    if (c === 33 /* ! */) {
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 4);
        pos = end === -1 ? length : end + 3;
      } else {
        pos = tagEnd(html, lt + 2);
      }
      continue;
    }
    if (c === 63 /* ? */) {
      pos = tagEnd(html, lt + 2);
      continue;
    }
    const closing = c === 47; /* / */
    const nameStart = closing ? lt + 2 : lt + 1;
    if (!isNameStart(html.charCodeAt(nameStart))) {
      words(w, '<');
      pos = lt + 1;
      continue;
    }
    let nameEnd = nameStart + 1;
    while (nameEnd < length && isNameChar(html.charCodeAt(nameEnd))) nameEnd++;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    pos = tagEnd(html, nameEnd);
    if (!closing && DROPPED.has(name) && html.charCodeAt(pos - 2) !== 47) {
      const end = closingTag(html, name, pos, seen);
      if (end !== -1) pos = end;
      else if (name === 'head') {
        // An unclosed head: its content runs to the body, if the body says where it starts.
        const body = bodyStart(html, pos, seen);
        if (body !== -1) pos = body;
      }
      continue;
    }
    if (name === 'br') {
      w.brs += 1;
      brk(w, w.brs >= 2 ? PARAGRAPH_BREAK : LINE_BREAK);
    } else if (PARAGRAPH.has(name)) brk(w, PARAGRAPH_BREAK);
    else if (LINE.has(name)) brk(w, LINE_BREAK);
    else if (CELL.has(name)) brk(w, SPACE);
  }
  return w.out.join('');
}
