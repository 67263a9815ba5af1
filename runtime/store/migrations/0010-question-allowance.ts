/**
 * Migration 10: the question allowance of `ask_mail` (issue 16). Never edit
 * once shipped; add the next one.
 *
 * `answering_allowance`: questions taken per period, keyed by the period's
 * first instant (epoch ms, periods aligned to the epoch). The answering
 * actor takes a question before the run makes any call, in one statement
 * that refuses to go past `Answering:MaxQuestionsPerPeriod`, so a restart
 * does not reset the allowance and a kill can at most count a question that
 * made no call.
 *
 * Writer: the answering actor. Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE answering_allowance (
  period_start INTEGER PRIMARY KEY,
  questions INTEGER NOT NULL CHECK (questions >= 0)
) STRICT;
`;
