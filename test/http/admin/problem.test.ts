/**
 * Every code of the error table through the administrative mapping
 * (problem.ts `failureAnswerOf`), unit by unit: the status is always the
 * table's; a 4xx is a problem document carrying the error's sentence
 * (E_APP_REFUSED: the 403 of exactly status, detail, permission, or the
 * credential's 401 when no permission is named); a 5xx has nothing to say.
 * The listener driven for real is test/http/error-surfaces.test.ts.
 */
import { STATUS_CODES } from 'node:http';
import t from 'tap';
import { failureAnswerOf, type FailureAnswer } from '../../../http/admin/problem.ts';
import { AppError, codeNames, Codes, type Code } from '../../../runtime/errors.ts';

/** Statuses the spec and docs fix, written out rather than read from the table (admin-surface "Errors"; docs/errors.md). */
const PINNED: Partial<Record<Code, number>> = {
  E_HTTP_BAD_REQUEST: 400,
  E_APP_REFUSED: 403,
  E_NOT_FOUND: 404,
  E_HTTP_BODY_TOO_LARGE: 413,
  E_KEYRING_MISSING: 500,
  E_INTERNAL: 500,
  E_ACTOR_DOWN: 503,
  E_ACTOR_STOPPING: 503,
  E_ACTOR_MAILBOX_FULL: 503,
  E_ACTOR_TIMEOUT: 504,
};

function statusOf(answer: FailureAnswer): number {
  if (answer.kind === 'unauthenticated') return 401;
  return answer.kind === 'empty' ? answer.status : answer.problem.status;
}

const TITLES: Record<number, string> = { 400: 'Invalid request', 404: 'Not found', 413: 'Request body too large' };

t.test('every code: the table status; a problem document for a 4xx, nothing for a 5xx', async (t) => {
  for (const code of codeNames) {
    const status = Codes[code].status;
    t.ok(status >= 400 && status <= 599 && STATUS_CODES[status] !== undefined, `${code}: ${status} is an HTTP error status`);
    const sentence = `The ${code} sentence.`;
    const answer = failureAnswerOf(new AppError(code, { message: sentence, details: { permission: 'service.admin.read' } }));
    if (code === 'E_APP_REFUSED') {
      t.same(answer, {
        kind: 'forbidden',
        problem: { status: 403, detail: 'The credential does not hold the permission service.admin.read.', permission: 'service.admin.read' },
      });
      t.same(failureAnswerOf(new AppError(code)), { kind: 'unauthenticated' }, 'no permission named: no principal reached the use case');
    } else if (status < 500) {
      t.same(answer, { kind: 'problem', problem: { status, title: TITLES[status] ?? STATUS_CODES[status], detail: sentence } }, `${code}: ${status} problem`);
    } else {
      t.same(answer, { kind: 'empty', status }, `${code}: empty ${status}`);
      t.notOk(JSON.stringify(answer).includes(sentence), `${code}: its message stays in the log`);
    }
    const pinned = PINNED[code];
    if (pinned !== undefined) t.equal(statusOf(answer), pinned, `${code}: ${pinned}`);
  }
});
