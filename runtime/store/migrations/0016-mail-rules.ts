/**
 * Migration 16: placeholder in the spam branch. The mail-rules branch writes
 * this migration (issue 32); merging takes its file in place of this one.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `SELECT 1;`;
