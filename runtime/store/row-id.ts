/**
 * How the surfaces name a stored row: a letter and the row id, as text
 * (`j12` a job, `o7` a send, `d3` a draft), so nobody does arithmetic on
 * it. Decoding is strict: one spelling per id, no leading zero, at most 15
 * digits (safe integers), so a made-up or mangled name reads as none.
 *
 * Shape only. Importable from anywhere.
 */

export type RowIdCodec = {
  /** The whole text of a well-formed id. */
  readonly pattern: RegExp;
  idOf(row: number): string;
  /** The row id a well-formed id names; null for any other text. */
  rowOf(text: string): number | null;
};

export function rowIdCodec(letter: string): RowIdCodec {
  const pattern = new RegExp(`^${letter}[1-9][0-9]{0,14}$`);
  return {
    pattern,
    idOf: (row) => `${letter}${row}`,
    rowOf: (text) => (pattern.test(text) ? Number(text.slice(1)) : null),
  };
}
