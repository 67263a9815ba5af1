/** The one place a job's failure is classified: SQLite codes by family, the parse pool's absence, anything else unexpected; never the failure's own message. */
import t from 'tap';
import { classifyJobFailure } from '../../../actors/imap-sync/job-failure.ts';
import { AppError } from '../../../runtime/errors.ts';

const sqlite = (code: string): Error => Object.assign(new Error('database is locked: secret@example.org'), { code });

t.test('classes, codes and constant sentences', async (t) => {
  t.match(classifyJobFailure(sqlite('SQLITE_BUSY')), { classification: 'database-busy', code: 'SQLITE_BUSY', reason: /Storage:BusyTimeout/ });
  t.match(classifyJobFailure(sqlite('SQLITE_BUSY_SNAPSHOT')), { classification: 'database-busy', code: 'SQLITE_BUSY_SNAPSHOT' });
  t.match(classifyJobFailure(sqlite('SQLITE_LOCKED')), { classification: 'database-busy' });
  t.match(classifyJobFailure(sqlite('SQLITE_BUSYNESS')), { classification: 'database-failure' }, 'a family, not a prefix');
  t.match(classifyJobFailure(sqlite('SQLITE_FULL')), { classification: 'database-failure', code: 'SQLITE_FULL' });
  t.match(classifyJobFailure(new AppError('E_ACTOR_TIMEOUT')), { classification: 'parser-unavailable', code: 'E_ACTOR_TIMEOUT' });
  t.match(classifyJobFailure(new AppError('E_ACTOR_DOWN')), { classification: 'parser-unavailable', code: 'E_ACTOR_DOWN' });
  t.match(classifyJobFailure(new AppError('E_PROTOCOL_INVALID')), { classification: 'unexpected', code: 'E_PROTOCOL_INVALID' });
  t.match(classifyJobFailure(new TypeError('x is undefined')), { classification: 'unexpected', code: 'E_INTERNAL' });
  t.match(classifyJobFailure('a string'), { classification: 'unexpected', code: 'E_INTERNAL' });
  for (const err of [sqlite('SQLITE_BUSY'), sqlite('SQLITE_IOERR')])
    t.notMatch(JSON.stringify(classifyJobFailure(err)), /secret|example\.org/, 'the message is never kept');
});
