/** The deployment's own secrets: made once, 32 random bytes, the same after the database is reopened. */
import { join } from 'node:path';
import t from 'tap';
import { deploymentSecret } from '../../../runtime/store/deployment-secrets.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { scratchDir } from './fixtures/scratch.ts';

const options = { busyTimeoutMs: 5000, synchronous: 'Full' } as const;

t.test('made once and kept', async (t) => {
  const file = join(scratchDir(t), 'm.db');
  const first = openStore({ database: file, ...options });
  migrate(first);
  const made = deploymentSecret(first, 'cursor-signing');
  t.equal(made.length, 32);
  t.same(deploymentSecret(first, 'cursor-signing'), made, 'asked again: the same');
  first.close();
  const again = openStore({ database: file, ...options });
  t.same(deploymentSecret(again, 'cursor-signing'), made, 'after reopening: the same');
  again.close();
  const other = openStore({ database: join(scratchDir(t), 'n.db'), ...options });
  migrate(other);
  t.not(deploymentSecret(other, 'cursor-signing').toString('hex'), made.toString('hex'), 'another deployment makes its own');
  other.close();
});
