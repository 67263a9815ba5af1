/**
 * What ended a failed attempt of a job the sync actor carries, in the one
 * place that maps raw failures: a class (shown in the dead-letter listing),
 * an internal code (logged and kept on the job row) and a constant sentence.
 * Nothing of the failure's own message is kept: a driver's message may
 * quote a value. Pure. Importable by the sync actor's modules and tests.
 */
import { AppError } from '../../runtime/errors.ts';
import type { JobFailure } from '../../runtime/store/jobs.ts';
import { errorCode } from '../../runtime/store/open.ts';

const REASONS = {
  'database-busy': 'The database stayed locked by another writer for longer than Storage:BusyTimeout.',
  'database-failure': 'The database refused a read or a write; the code is in the server log.',
  'parser-unavailable': 'The MIME parse pool did not answer in time, or stopped before answering.',
  unexpected: 'The work failed unexpectedly; the cause is in the server log.',
} as const;

export function classifyJobFailure(err: unknown): JobFailure {
  if (err instanceof AppError) {
    // A segment's only ask is to the parse pool; a timeout or a stopped pool is its absence.
    if (err.code.startsWith('E_ACTOR_')) return failure('parser-unavailable', err.code);
    return failure('unexpected', err.code);
  }
  const code = errorCode(err);
  if (/^SQLITE_(BUSY|LOCKED)(_|$)/.test(code)) return failure('database-busy', code);
  if (code.startsWith('SQLITE_')) return failure('database-failure', code);
  return failure('unexpected', 'E_INTERNAL');
}

function failure(classification: keyof typeof REASONS, code: string): JobFailure {
  return { classification, code, reason: REASONS[classification] };
}
