/**
 * The SMTP outcome table (actors/outbox/smtp-outcome.ts): every way an
 * attempt can end — the wire, TLS, the login, each stage's 4xx and 5xx, each
 * recipient's reply, the body's final reply, timeouts and drops before and
 * after the body began — and whether the session may be kept. The errors
 * have the shape nodemailer gives them (code, responseCode, command,
 * recipient, rejectedErrors); the real exchanges are in outbox-delivery.
 */
import t, { type Test } from 'tap';
import {
  type AttemptResult,
  type Ending,
  type FailureCode,
  type SmtpError,
  failureCode,
  keepsSession,
  outcomeOf,
} from '../../../actors/outbox/smtp-outcome.ts';

const offered = [
  { position: 0, address: 'Ann@example.org' },
  { position: 1, address: 'bob@example.org' },
  { position: 2, address: 'cy@example.org' },
];
/** An error as nodemailer shapes it: its code, the command it answered, the reply code. */
const err = (code: string, command: string, responseCode?: number): SmtpError => ({ code, command, ...(responseCode ? { responseCode } : {}) });
const refusal = (recipient: string, responseCode: number): SmtpError => ({ ...err('EENVELOPE', 'RCPT TO', responseCode), recipient });
const failure = (e: SmtpError, bodyBegan = false): Ending => ({ by: 'failure', err: e, bodyBegan });
const reply = (e: SmtpError, bodyBegan = false): Ending => ({ by: 'reply', err: e, info: undefined, bodyBegan });
const sent = (accepted: string[], rejectedErrors: SmtpError[] = []): Ending => ({
  by: 'reply',
  err: null,
  info: { accepted, rejectedErrors },
  bodyBegan: true,
});
const answer = (position: number, state: 'accepted' | 'refused' | 'pending', replyCode: number) => ({ position, state, replyCode });

/** Each case's outcome, and whether its session is kept (only a clean end of the message keeps it). */
function check(t: Test, cases: Array<[string, Ending, AttemptResult]>, keeps = false): void {
  for (const [name, ending, result] of cases) {
    t.same(outcomeOf(ending, offered), result, name);
    t.equal(keepsSession(ending), keeps, `${name}: the session is ${keeps ? 'kept' : 'closed'}`);
  }
}

t.test('before the body: not begun, so nothing was delivered', async (t) => {
  const notBegun = (code: FailureCode, permanent: boolean, replyCode: number | null = null): AttemptResult => ({
    kind: 'not-begun',
    permanent,
    code,
    replyCode,
  });
  check(t, [
    ['connection refused', failure(err('ECONNECTION', 'CONN')), notBegun('server-unreachable', false)],
    ['no such host', failure(err('EDNS', 'CONN')), notBegun('server-unreachable', false)],
    ['socket error', failure(err('ESOCKET', 'CONN')), notBegun('server-unreachable', false)],
    ['socket timeout', failure(err('ETIMEDOUT', 'CONN')), notBegun('server-unresponsive', false)],
    ['SendTimeout', { by: 'timeout', bodyBegan: false }, notBegun('server-unresponsive', false)],
    ['TLS refused', failure(err('ETLS', 'CONN')), notBegun('tls-refused', false)],
    ['TLS closed with a 454', failure(err('ETLS', 'CONN', 454)), notBegun('tls-refused', false, 454)],
    ['login refused (535)', failure(err('EAUTH', 'AUTH PLAIN', 535)), notBegun('login-refused', false, 535)],
    ['token refused without a reply', failure(err('EAUTH', 'AUTH XOAUTH2')), notBegun('login-refused', false)],
    ['MAIL FROM 550', reply(err('EENVELOPE', 'MAIL FROM', 550)), notBegun('sender-refused', true, 550)],
    ['MAIL FROM 451', reply(err('EENVELOPE', 'MAIL FROM', 451)), notBegun('sender-refused', false, 451)],
    ['DATA 554', reply(err('EENVELOPE', 'DATA', 554)), notBegun('data-refused', true, 554)],
    ['DATA 451', reply(err('EENVELOPE', 'DATA', 451)), notBegun('data-refused', false, 451)],
    ["over the server's SIZE", reply(err('EMESSAGE', 'MAIL FROM')), notBegun('too-large', true)],
    ['RCPT refused without the per-recipient list', reply(err('EENVELOPE', 'RCPT TO', 550)), notBegun('recipients-refused', true, 550)],
    ['the body stream destroyed (claim lost)', reply(err('ESTREAM', 'API')), notBegun('smtp-failure', false)],
    ['a code no rule names', failure(err('EPROTOCOL', 'RSET', 500)), notBegun('smtp-failure', false, 500)],
    ['an error with no code', failure({}), notBegun('smtp-failure', false)],
  ]);
});

t.test('every recipient refused at RCPT: each one by its own reply', async (t) => {
  const rejectedErrors = [refusal('ann@EXAMPLE.org', 550), refusal('bob@example.org', 450), refusal('stranger@example.org', 550)];
  const everyRefused = { ...err('EENVELOPE', 'RCPT TO', 450), rejectedErrors };
  const result: AttemptResult = {
    kind: 'answered',
    replies: [answer(0, 'refused', 550), answer(1, 'pending', 450)],
    failure: { code: 'recipients-refused', replyCode: 450 },
  };
  // The transaction ended cleanly (the next use's RSET ends it), but only nodemailer's reply to the message says so.
  check(t, [['as the reply to the message', reply(everyRefused), result]], true);
  check(t, [['as a failure of the session', failure(everyRefused), result]]);
});

t.test("the body's final reply", async (t) => {
  const everyone = (state: 'accepted' | 'refused' | 'pending', replyCode: number) => offered.map((r) => answer(r.position, state, replyCode));
  check(
    t,
    [
      [
        '250, every recipient accepted',
        sent(['ann@example.org', 'BOB@example.org', 'cy@example.org']),
        { kind: 'answered', replies: everyone('accepted', 250), failure: null },
      ],
      [
        '250, one refused and one deferred at RCPT',
        sent(['ann@example.org'], [refusal('bob@example.org', 451), refusal('cy@example.org', 550)]),
        {
          kind: 'answered',
          replies: [answer(0, 'accepted', 250), answer(1, 'pending', 451), answer(2, 'refused', 550)],
          failure: { code: 'recipient-refused', replyCode: 550 },
        },
      ],
      [
        '250, one deferred at RCPT',
        sent(['ann@example.org', 'cy@example.org'], [refusal('bob@example.org', 452)]),
        {
          kind: 'answered',
          replies: [answer(0, 'accepted', 250), answer(2, 'accepted', 250), answer(1, 'pending', 452)],
          failure: { code: 'recipient-deferred', replyCode: 452 },
        },
      ],
    ],
    true,
  );
  check(t, [
    [
      'a 554 to the body refuses every recipient',
      reply(err('EMESSAGE', 'DATA', 554), true),
      { kind: 'answered', replies: everyone('refused', 554), failure: { code: 'message-refused', replyCode: 554 } },
    ],
    [
      'a 452 to the body leaves every recipient owed',
      reply(err('EMESSAGE', 'DATA', 452), true),
      { kind: 'answered', replies: everyone('pending', 452), failure: { code: 'message-refused', replyCode: 452 } },
    ],
  ]);
});

t.test('after the body began, no final reply: delivery unknown, never retried by itself', async (t) => {
  const unknown = (code: FailureCode): AttemptResult => ({ kind: 'no-final-reply', code });
  check(t, [
    ['dropped mid-DATA', failure(err('ECONNECTION', 'CONN'), true), unknown('server-unreachable')],
    ['a 421 as the server hangs up', reply(err('ECONNECTION', 'CONN', 421), true), unknown('server-unreachable')],
    ['socket timeout', failure(err('ETIMEDOUT', 'CONN'), true), unknown('server-unresponsive')],
    ['SendTimeout', { by: 'timeout', bodyBegan: true }, unknown('server-unresponsive')],
    ['a stream error', reply(err('ESTREAM', 'API'), true), unknown('smtp-failure')],
  ]);
});

t.test('failure codes name the stage, never the server', async (t) => {
  const codes: Array<[SmtpError, FailureCode]> = [
    [{ code: 'EAUTH' }, 'login-refused'],
    [{ code: 'ETLS' }, 'tls-refused'],
    [{ code: 'EMESSAGE' }, 'too-large'],
    [{ code: 'EENVELOPE', command: 'MAIL FROM' }, 'sender-refused'],
    [{ code: 'EENVELOPE', command: 'RCPT TO' }, 'recipients-refused'],
    [{ code: 'EENVELOPE', command: 'DATA' }, 'data-refused'],
    [{ code: 'EENVELOPE', command: 'API' }, 'smtp-failure'],
    [{ code: 'ETIMEDOUT' }, 'server-unresponsive'],
    [{ code: 'ECONNECTION' }, 'server-unreachable'],
    [{ code: 'EDNS' }, 'server-unreachable'],
    [{ code: 'ESOCKET' }, 'server-unreachable'],
    [{ code: 'ECONNREFUSED' }, 'smtp-failure'],
    [{}, 'smtp-failure'],
  ];
  for (const [e, code] of codes) t.equal(failureCode(e), code, `${e.code ?? 'no code'} ${e.command ?? ''}`.trim());
});
