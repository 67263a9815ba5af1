/**
 * How an answering run ended and degraded, as `answering_runs` records them:
 * the words the answering actor writes (actors/answering, which publishes
 * them in its protocol) and the audit page reads back (actors/mail-query).
 * Shape only: no statement, so a protocol names them without loading the
 * store's writers or another actor's protocol.
 *
 * Importable from anywhere.
 */

/**
 * How a run ended. `answered` is the only success; the bounds end a run with
 * 57001, the provider codes with 54001 to the client (71001, 72001, 73001 in
 * the log).
 */
export const RUN_ENDINGS = [
  'answered',
  'calls-bound-reached',
  'characters-bound-reached',
  'provider-refused-credential',
  'provider-did-not-answer',
  'provider-produced-no-text',
  'deadline-passed',
  'failed',
] as const;
export type RunEnding = (typeof RUN_ENDINGS)[number];

/**
 * How a run degraded (any number of them):
 * - `lexical-only`: a lookup could not be placed semantically and ranked by words alone;
 * - `retrieval-cut`: a lookup found more than the passages per lookup, or an extract was cut to the characters per passage;
 * - `answer-cut`: the answer was longer than the answer's bound (MAX_ANSWER_CHARACTERS);
 * - `citations-cut`: the run read more messages than the citations' bound (MAX_CITATIONS).
 */
export const RUN_DEGRADATIONS = ['lexical-only', 'retrieval-cut', 'answer-cut', 'citations-cut'] as const;
export type RunDegradation = (typeof RUN_DEGRADATIONS)[number];
