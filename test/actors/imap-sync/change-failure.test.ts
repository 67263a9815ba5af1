/**
 * What a change-journal attempt's failure is called (classifyChangeFailure,
 * actors/imap-sync/change-journal.ts), through the one IMAP classifier: the
 * dead letter says authentication, TLS, protocol or outage with the error
 * table's own sentence, and a defect is thrown on (the actor crashes, as the
 * sync run does), never written down as the server's fault.
 */
import t from 'tap';
import { classifyChangeFailure } from '../../../actors/imap-sync/change-journal.ts';
import { AppError, Codes } from '../../../runtime/errors.ts';

const coded = (code: string): Error => Object.assign(new Error(`${code}: server said Subject: private`), { code });
const failed = (fields: Record<string, unknown>): Error => Object.assign(new Error('Command failed'), fields);

t.test('the journal failure classes as a table', async (t) => {
  const table: Array<[string, unknown, string, string]> = [
    // [what, thrown, class, code]
    ['refused login', failed({ authenticationFailed: true }), 'authentication-refused', 'E_IMAP_AUTH'],
    ['refused refresh token', new AppError('E_OAUTH_REFRESH_REFUSED'), 'authentication-refused', 'E_OAUTH_REFRESH_REFUSED'],
    ['refused client', new AppError('E_OAUTH_CLIENT_REFUSED'), 'authentication-refused', 'E_OAUTH_CLIENT_REFUSED'],
    ['no refresh token', new AppError('E_OAUTH_REFRESH_MISSING'), 'authentication-refused', 'E_OAUTH_REFRESH_MISSING'],
    ['token endpoint misconfigured', new AppError('E_OAUTH_MISCONFIGURED'), 'authentication-refused', 'E_OAUTH_MISCONFIGURED'],
    ['certificate not accepted', coded('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls-refused', 'E_IMAP_TLS'],
    ['STARTTLS not offered', failed({ tlsFailed: true }), 'tls-refused', 'E_IMAP_TLS'],
    ['a cut', coded('ECONNRESET'), 'server-unresponsive', 'E_IMAP_UNRESPONSIVE'],
    ['a stall', coded('ETIMEOUT'), 'server-unresponsive', 'E_IMAP_UNRESPONSIVE'],
    ['BYE', failed({ responseStatus: 'BYE' }), 'server-unresponsive', 'E_IMAP_UNRESPONSIVE'],
    ['token endpoint down', new AppError('E_OAUTH_UNAVAILABLE'), 'server-unresponsive', 'E_OAUTH_UNAVAILABLE'],
    ['garbage from the server', coded('ParserError2'), 'server-protocol', 'E_IMAP_PROTOCOL'],
    ['NO', failed({ responseStatus: 'NO' }), 'server-protocol', 'E_IMAP_PROTOCOL'],
    ['database busy', coded('SQLITE_BUSY'), 'database-busy', 'SQLITE_BUSY'],
    ['database full', coded('SQLITE_FULL'), 'database-failure', 'SQLITE_FULL'],
  ];
  for (const [what, err, classification, code] of table) {
    const failure = classifyChangeFailure(err);
    t.match(failure, { classification, code }, what);
    if (code in Codes) t.equal(failure.reason, Codes[code as keyof typeof Codes].msg, `${what}: the error table's sentence`);
    t.notMatch(failure.reason, /private|Subject/, `${what}: nothing of the error's text`);
  }
  t.notMatch(classifyChangeFailure(failed({ authenticationFailed: true })).reason, /did not answer/, 'a refused login is not said as silence');
  t.notMatch(classifyChangeFailure(coded('CERT_HAS_EXPIRED')).reason, /did not answer/, 'a TLS failure is not said as silence');
});

t.test('defects are thrown on', async (t) => {
  const defects: unknown[] = [
    new TypeError("Cannot read properties of undefined (reading 'uid')"),
    failed({ responseStatus: 'BAD' }),
    coded('InvalidSequenceSet'),
    new AppError('E_PROTOCOL_INVALID'),
    new AppError('E_INTERNAL'),
    null,
  ];
  for (const err of defects) {
    t.throws(() => classifyChangeFailure(err), `${String((err as { code?: string; name?: string })?.code ?? (err as Error)?.name ?? err)}: thrown on`);
  }
});
