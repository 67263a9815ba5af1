/**
 * Characters as Mailcairn's cost bounds count them (the embedding spend,
 * the characters a question may send): Unicode code points, as SQLite's
 * `length()` counts them, so an emoji is one character, not two UTF-16
 * units. Importable from anywhere.
 */
export function characterCount(text: string): number {
  let surrogates = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) surrogates += 1;
  }
  return text.length - surrogates;
}
