/**
 * Migration 11: an index for the answering audit's retention prune (issue
 * 16). Never edit once shipped; add the next one.
 *
 * The prune (runtime/store/answering/audit.ts) runs after every recorded
 * run and takes the oldest runs ended before the retention instant, across
 * all accounts. The page index of 0001 leads with the account, so without
 * this one the prune read the whole table each time.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE INDEX answering_runs_ended ON answering_runs (ended_at, id);
`;
