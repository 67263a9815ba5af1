/**
 * The thread of the local model kept for search queries
 * (`embedding-local-query`; the runs: local-model-runs.ts). It keeps the
 * process's priority: a query placed during a backfill neither waits for a
 * backfill run to end nor yields its core to one (the backfill's threads
 * run below normal priority).
 */
import { lowerThreadPriority } from '../../runtime/thread-priority.ts';
import { modelTask } from './local-model-runs.ts';

// At 0 the call changes nothing and reports the thread's nice value.
export default modelTask('embedding-local-query', lowerThreadPriority(0));
