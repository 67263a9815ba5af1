/** Secret and personal fields never reach a log line, at any depth, whoever logs them. */
import t from 'tap';
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
