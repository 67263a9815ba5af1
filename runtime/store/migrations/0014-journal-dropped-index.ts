/**
 * Migration 14: the change journal's dropped entries, by account (issue 31).
 * Never edit once shipped; add the next one.
 *
 * The store gauges count the journal by state at every metrics collection
 * (actors/mail-query/store-gauges.ts): the total from `jobs_by_type`, the
 * entries not ended and the dead letters from `jobs_live_key`, and the
 * dropped ones, which no index held, from this one. Ended entries are never
 * deleted, so without it a collection read every row the journal ever had.
 * Only what an operator dropped is in it: it costs nothing to other writes.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE INDEX jobs_dropped ON jobs (type, account_id) WHERE state = 'dropped';
`;
