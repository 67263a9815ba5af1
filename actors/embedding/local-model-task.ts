/**
 * A thread of the local model that embeds passages (`embedding-local`; the
 * runs: local-model-runs.ts). Its priority is lowered when it starts
 * (runtime/thread-priority.ts): the backfill can always wait, searches and
 * the mirror cannot.
 */
import { lowerThreadPriority } from '../../runtime/thread-priority.ts';
import { modelTask } from './local-model-runs.ts';

export default modelTask('embedding-local', lowerThreadPriority());
