/**
 * `deployment_secrets`: random keys the deployment makes once and keeps.
 * Sole writer: boot, on the main thread right after `migrate` (before any
 * listener opens). The value never leaves the process and is never logged.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from './open.ts';
import { one, run } from './rows.ts';

export type DeploymentSecretName = 'cursor-signing';

/** The named secret, made now if this deployment has none yet. */
export function deploymentSecret(db: Database, name: DeploymentSecretName, now: number = Date.now()): Buffer {
  const read = db.transaction((): Buffer => {
    const row = one<{ value: ArrayBuffer | Uint8Array }>(db.prepare('SELECT value FROM deployment_secrets WHERE name = ?'), [name]);
    if (row !== undefined) return Buffer.from(row.value instanceof ArrayBuffer ? new Uint8Array(row.value) : row.value);
    const value = randomBytes(32);
    run(db.prepare('INSERT INTO deployment_secrets (name, value, created_at) VALUES (?, ?, ?)'), [name, new Uint8Array(value), now]);
    return value;
  });
  return read.immediate();
}
