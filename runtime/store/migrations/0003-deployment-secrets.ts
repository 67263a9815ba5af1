/**
 * Migration 3: secrets the deployment makes for itself, once, and keeps.
 *
 * - `cursor-signing`: 32 random bytes keying the HMAC of administrative
 *   page cursors, so a cursor "not issued by this deployment" is told apart
 *   from one it issued, across restarts and without a key ring.
 *
 * Writer: boot (`runtime/store/deployment-secrets.ts`), on the main thread
 * right after `migrate`. Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE deployment_secrets (
  name TEXT PRIMARY KEY,
  value BLOB NOT NULL CHECK (length(value) = 32),
  created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
`;
