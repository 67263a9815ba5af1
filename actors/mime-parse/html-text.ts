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
/** Elements that end a line. */
const LINE = new Set([
  'br', 'div', 'tr', 'li', 'dt', 'dd', 'section', 'article', 'header', 'footer', 'nav', 'aside', 'main',
  'address', 'center', 'form', 'fieldset', 'figure', 'figcaption', 'caption', 'details', 'summary', 'option', 'body', 'html',
]);
/** Cells: a space keeps the words of neighbouring cells apart. */
const CELL = new Set(['td', 'th']);

function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}

function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 48 && c <= 57) || c === 45 || c === 58;
}

/** Offset just past the `>` closing a tag that starts at `from`, honouring quoted attribute values. */
function tagEnd(html: string, from: number): number {
  const gt = html.indexOf('>', from);
  if (gt === -1) return html.length;
  const dq = html.indexOf('"', from);
  const sq = html.indexOf("'", from);
  if ((dq === -1 || dq > gt) && (sq === -1 || sq > gt)) return gt + 1;
  let quote = 0;
  for (let i = from; i < html.length; i++) {
    const c = html.charCodeAt(i);
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) {
      // A quote only opens a value right after `=` (possibly spaced); stray quotes are text.
      let j = i - 1;
      while (j > from && (html.charCodeAt(j) === 32 || html.charCodeAt(j) === 9 || html.charCodeAt(j) === 10)) j--;
      if (html.charCodeAt(j) === 61) quote = c;
    } else if (c === 62) {
      return i + 1;
    }
  }
  return gt + 1; // an unterminated quote: fall back to the first `>`
}

const closers = new Map<string, RegExp>();

/** Offset just past `</name ...>` at or after `from`, or -1. */
function closingTag(html: string, name: string, from: number): number {
  let pattern = closers.get(name);
  if (!pattern) {
    pattern = new RegExp(`</${name}[\\s>]`, 'gi');
    closers.set(name, pattern);
  }
  pattern.lastIndex = from;
  const m = pattern.exec(html);
  if (!m) return -1;
  const gt = html.indexOf('>', m.index);
  return gt === -1 ? html.length : gt + 1;
}

export function htmlToText(html: string): string {
  const out: string[] = [];
  let pos = 0;
  const length = html.length;
  while (pos < length) {
    const lt = html.indexOf('<', pos);
    if (lt === -1) {
      out.push(collapse(html.slice(pos)));
      break;
    }
    if (lt > pos) out.push(collapse(html.slice(pos, lt)));
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
      out.push('<');
      pos = lt + 1;
      continue;
    }
    let nameEnd = nameStart + 1;
    while (nameEnd < length && isNameChar(html.charCodeAt(nameEnd))) nameEnd++;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    pos = tagEnd(html, nameEnd);
    if (!closing && DROPPED.has(name) && html.charCodeAt(pos - 2) !== 47) {
      const end = closingTag(html, name, pos);
      if (end !== -1) pos = end;
      else if (name === 'head') {
        // An unclosed head: its content runs to the body, if the body says where it starts.
        const body = html.search(/<body[\s>]/i);
        if (body > pos) pos = body;
      }
      continue;
    }
    if (PARAGRAPH.has(name)) out.push('\n\n');
    else if (LINE.has(name)) out.push('\n');
    else if (CELL.has(name)) out.push(' ');
  }
  return tidy(decodeEntities(out.join('')));
}

function collapse(text: string): string {
  return text.replace(/[ \t\r\n\f]+/g, ' ');
}

/** White space of reduced text: single spaces, no blank runs longer than one line. */
function tidy(text: string): string {
  return text
    .replace(/[ \t\f\r\u00a0\u200b]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
