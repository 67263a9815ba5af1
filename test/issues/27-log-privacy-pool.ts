/**
 * Child process of 27-log-privacy.test.ts: a pool at the level given in
 * argv[2] runs a task that throws an error quoting argv[3]. A pool thread
 * writes its lines to fd 1, so the parent reads them from this process's
 * standard output rather than from its own.
 */
import { AppError } from '../../runtime/errors.ts';
import { createPool } from '../../runtime/pool/pool.ts';
import { HostData } from '../../runtime/host/host-data.ts';

const level = HostData.shape.logLevel.parse(process.argv[2]);
const text = process.argv[3]!;
const pool = createPool({ id: 'echo-pool', entry: new URL('../fixtures/pool/echo-task.ts', import.meta.url), minThreads: 1, maxThreads: 1, logLevel: level });
try {
  await pool.ask({ type: 'throw-quoting', text });
} catch (err) {
  if (!(err instanceof AppError) || err.code !== 'E_INTERNAL') throw err;
}
await pool.close();
