/**
 * The body cut into passages for later embedding. Paragraphs are gathered
 * into a passage until it reaches MIN_PASSAGE_CHARS; a passage never exceeds
 * MAX_PASSAGE_CHARS, so it closes early (shorter than the minimum) rather
 * than break a paragraph that would not fit. A paragraph longer than the
 * maximum is cut at sentence ends, else at white space, else hard. At most
 * MAX_PASSAGES passages are made: only the first ~64–128 K characters of a
 * long body are embedded.
 *
 * Private to actors/mime-parse/.
 */

export const MIN_PASSAGE_CHARS = 1_000;
export const MAX_PASSAGE_CHARS = 2_000;
export const MAX_PASSAGES = 64;

/** The last cut point in `text[0, max]`: sentence end, else white space, else `max`. */
function cutPoint(text: string, max: number): number {
  const window = text.slice(0, max + 1);
  let best = -1;
  const sentence = /[.!?;:。！？][)"'”’»]*\s/g;
  for (let m = sentence.exec(window); m !== null; m = sentence.exec(window)) {
    const at = m.index + m[0].length - 1;
    if (at <= max) best = at;
  }
  if (best >= MIN_PASSAGE_CHARS / 2) return best;
  const space = window.lastIndexOf(' ', max);
  const line = window.lastIndexOf('\n', max);
  const ws = Math.max(space, line);
  return ws >= MIN_PASSAGE_CHARS / 2 ? ws : max;
}

/** A paragraph longer than a passage, as pieces of at most MAX_PASSAGE_CHARS. */
function pieces(paragraph: string, out: string[], room: number): void {
  let rest = paragraph;
  while (rest.length > MAX_PASSAGE_CHARS && out.length < room) {
    const at = cutPoint(rest, MAX_PASSAGE_CHARS);
    out.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest) out.push(rest);
}

export function passages(body: string): string[] {
  const out: string[] = [];
  let current = '';
  const flush = (): void => {
    if (current) out.push(current);
    current = '';
  };
  for (const paragraph of body.split(/\n[ \t]*\n/)) {
    if (out.length >= MAX_PASSAGES) break;
    const text = paragraph.trim();
    if (!text) continue;
    const parts: string[] = [];
    pieces(text, parts, MAX_PASSAGES + 1);
    for (const part of parts) {
      if (current && current.length + 2 + part.length > MAX_PASSAGE_CHARS) flush();
      current = current ? `${current}\n\n${part}` : part;
      if (current.length >= MIN_PASSAGE_CHARS) flush();
    }
  }
  flush();
  return out.slice(0, MAX_PASSAGES);
}
