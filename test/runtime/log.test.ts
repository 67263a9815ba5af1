/** Secret and personal fields never reach a log line, at any depth, whoever logs them. */
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { AppError } from '../../runtime/errors.ts';
import { captureLog } from '../helpers/log-capture.ts';

t.test('denied fields are censored at any depth, case-insensitively', async (t) => {
  const { log, raw, lines } = captureLog();
  log.info(
    {
      event: 'probe',
      account: 'alice',
      Password: 'hunter2',
      nested: { deeper: { accessToken: 'tok-123', subject: 'Quarterly numbers', keep: 7 } },
      list: [{ from: 'bob@example.org' }, { to: ['carol@example.org'] }],
      body: Buffer.from('Dear Bob'),
    },
    'probe',
  );
  log.child({ actor: 'x' }).warn({ refreshToken: 'r-1', authorization: 'Bearer abc' }, 'child');
  const text = raw();
  for (const secret of ['hunter2', 'tok-123', 'Quarterly', 'bob@example.org', 'carol@example.org', 'Dear Bob', 'r-1', 'Bearer abc']) {
    t.notOk(text.includes(secret), `${secret} does not appear`);
  }
  t.match(lines[0], { account: 'alice', Password: '[redacted]', nested: { deeper: { accessToken: '[redacted]', subject: '[redacted]', keep: 7 } } });
  t.match(lines[1], { actor: 'x', refreshToken: '[redacted]' });
});

const SUBJECT = 'Quarterly numbers for Dana';
const ADDRESS = 'dana@example.org';

/** An error whose message quotes a subject and an address, with a database error as its cause. */
function quoting(): Error {
  const cause = Object.assign(new Error(`UNIQUE constraint failed: messages.subject = '${SUBJECT}' <${ADDRESS}>`), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
  return new AppError('E_ACTOR_CRASHED', { message: `could not store "${SUBJECT}" from ${ADDRESS}`, cause });
}

t.test('errors are reduced to class, code, frames and causes, however they are passed', async (t) => {
  const { log, raw, lines } = captureLog();
  log.error({ err: quoting(), event: 'top' }, 'top');
  log.error({ event: 'nested', run: { failures: [quoting()] }, error: quoting() }, 'nested');
  log.error(quoting());
  log.error({ err: quoting() });
  log.warn({ event: 'params' }, 'params %s %o %j', quoting(), { e: quoting() }, quoting());
  log.child({ err: quoting(), because: quoting() }).warn({ event: 'child' }, 'child');
  log.error({ err: `thrown text quoting ${SUBJECT}`, event: 'thrown-string' }, 'thrown-string');
  const text = raw();
  t.notOk(text.includes('Quarterly'), 'no subject in any line');
  t.notOk(text.includes(ADDRESS), 'no address in any line');
  t.notOk(text.includes('constraint failed'), 'no message of any cause');

  const expected = { type: 'AppError', code: 'E_ACTOR_CRASHED', stack: /^at /, cause: { type: 'Error', code: 'SQLITE_CONSTRAINT_UNIQUE', stack: /^at / } };
  t.match(lines[0], { event: 'top', msg: 'top', err: expected });
  t.match(lines[1], { run: { failures: [expected] }, error: expected }, 'an Error anywhere in the fields');
  t.match(lines[2], { err: expected }, 'an Error in place of the fields is logged under err');
  t.notOk('msg' in lines[2]! || 'msg' in lines[3]!, 'pino does not take the message as msg');
  t.match(lines[3], { err: expected });
  t.match(lines[5], { err: expected, because: expected, event: 'child' }, 'fields bound by child()');
  t.same(lines[6]!.err, { type: 'thrown-string' }, 'whatever is under err is read as something thrown');
});

t.test('an error of another realm is reduced too', async (t) => {
  const { log, raw, lines } = captureLog();
  const foreign: unknown = runInNewContext(`Object.assign(new RangeError(${JSON.stringify(ADDRESS)}), { code: 'ERR_OUT_OF_RANGE' })`);
  t.notOk(foreign instanceof Error, 'not an Error of this realm');
  log.error({ err: foreign, nested: { foreign } }, 'foreign');
  t.notOk(raw().includes(ADDRESS));
  t.match(lines[0], { err: { type: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, nested: { foreign: { type: 'RangeError', code: 'ERR_OUT_OF_RANGE' } } });
});

t.test('the stack loses its first line; a stack whose first line cannot be told apart is dropped', async (t) => {
  const { log, raw, lines } = captureLog();
  // A message over several lines, one of them dressed as a frame.
  const multiline = new Error(`first line\n    at ${ADDRESS} (file:///x.ts:1:1)`);
  log.error({ err: multiline }, 'multiline');
  // The stack was read, then the message changed: the stack's first line no longer says where the message ends.
  const changed = new TypeError('before');
  void changed.stack;
  changed.message = `after, quoting ${SUBJECT}`;
  log.error({ err: changed }, 'changed');
  const handWritten = Object.assign(new Error('x'), { stack: `Error: ${SUBJECT}\nnot a frame` });
  log.error({ err: handWritten }, 'hand-written');

  t.notOk(raw().includes(ADDRESS) || raw().includes('Quarterly'), 'neither reaches the log');
  t.match(lines[0]!.err, { type: 'Error', stack: /^at .*log\.test\.ts/ }, 'frames kept, pointing at the throw');
  t.same(lines[1]!.err, { type: 'TypeError' }, 'no stack rather than one that might quote');
  t.same(lines[2]!.err, { type: 'Error' });
});

t.test('a cause chain is followed a bounded depth, a cycle ends, aggregate errors are listed', async (t) => {
  const { log, lines } = captureLog();
  const a = new Error('a');
  const b = new Error('b', { cause: a });
  (a as { cause?: unknown }).cause = b;
  log.error({ err: a }, 'cycle');
  log.error({ err: new AggregateError([Object.assign(new Error(ADDRESS), { code: 'ECONNREFUSED' })], 'all failed') }, 'aggregate');
  let depth = 0;
  for (let e = lines[0]!.err as { cause?: unknown } | undefined; e; e = e.cause as typeof e) depth += 1;
  t.equal(depth, 5, 'the error and four causes');
  t.match(lines[1]!.err, { type: 'AggregateError', errors: [{ type: 'Error', code: 'ECONNREFUSED' }] });
});
