/** An error named by class and code only: nothing that could quote a mail. (Moved from the mime-parse tests with the function.) */
import t from 'tap';
import { classOf, errorClass } from '../../runtime/error-class.ts';
import { AppError } from '../../runtime/errors.ts';

t.test('errorClass: constructor name and code, nothing that could quote the mail', async (t) => {
  t.equal(errorClass(new RangeError('Invalid array length near "Subject: secret"')), 'RangeError');
  t.equal(errorClass(Object.assign(new TypeError('bad'), { code: 'ERR_INVALID_ARG_TYPE' })), 'TypeError:ERR_INVALID_ARG_TYPE');
  t.equal(errorClass(Object.assign(new Error('x'), { code: 'has spaces: secret@example.org' })), 'Error', 'a code that is not a plain token is left out');
  t.equal(errorClass('a thrown string with secret@example.org'), 'thrown-string');
  t.equal(errorClass(undefined), 'thrown-undefined');
  t.equal(errorClass(Object.create(null)), 'unknown');
});

t.test('classOf: the same, as fields; the class is the constructor, not the writable name', async (t) => {
  t.same(classOf(new AppError('E_ACTOR_CRASHED')), { type: 'AppError', code: 'E_ACTOR_CRASHED' });
  t.same(classOf(Object.assign(new Error('x'), { name: 'Subject: secret' })), { type: 'Error' });
  t.same(classOf(null), { type: 'thrown-object' });
});
