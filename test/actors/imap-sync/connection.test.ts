/**
 * classifyImapFailure is an allow-list: only what imapflow or the socket
 * marked as theirs becomes an E_IMAP_* code; a defect or a database error is
 * thrown on unchanged, whatever its message says.
 */
import { ImapFlowErrorCode } from 'imapflow';
import t from 'tap';
import { classifyImapFailure, ImapCommandRejected, imapFailureFields, imapflowCodes } from '../../../actors/imap-sync/connection.ts';
import { AppError } from '../../../runtime/errors.ts';

const coded = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });
const codeOf = (err: unknown): string => classifyImapFailure(err).code;

t.test('the wire, the server and the login', async (t) => {
  for (const code of [
    'ECONNRESET',
    'ECONNREFUSED',
    'ETIMEDOUT',
    'EPIPE',
    'ENOTFOUND',
    'NoConnection',
    'EConnectionClosed',
    'ETIMEOUT',
    'CONNECT_TIMEOUT',
    'GREETING_TIMEOUT',
    'ClosedAfterConnectText',
    'ETHROTTLE',
  ]) {
    t.equal(codeOf(coded(code)), 'E_IMAP_UNRESPONSIVE', code);
  }
  for (const code of ['ParserError3', 'ParserErrorExchange', 'InvalidResponse', 'MissingTag', 'LiteralTooLarge', 'TooManyResponses']) {
    t.equal(codeOf(coded(code)), 'E_IMAP_PROTOCOL', code);
  }
  t.equal(
    codeOf(Object.assign(new Error('Command failed'), { responseStatus: 'NO', responseText: 'Mailbox was deleted under us' })),
    'E_IMAP_PROTOCOL',
    'a NO answer',
  );
  t.equal(codeOf(Object.assign(new Error('Command failed'), { responseStatus: 'BYE' })), 'E_IMAP_UNRESPONSIVE', 'a BYE');
  t.equal(codeOf(Object.assign(new Error('Authentication failed'), { authenticationFailed: true })), 'E_IMAP_AUTH');
  t.equal(codeOf(Object.assign(new Error('Command failed'), { responseStatus: 'NO', serverResponseCode: 'AUTHENTICATIONFAILED' })), 'E_IMAP_AUTH');
  t.equal(codeOf(coded('DEPTH_ZERO_SELF_SIGNED_CERT')), 'E_IMAP_TLS');
  t.equal(codeOf(coded('ERR_TLS_CERT_ALTNAME_INVALID')), 'E_IMAP_TLS');
  t.equal(codeOf(Object.assign(new Error('Server does not support STARTTLS'), { tlsFailed: true })), 'E_IMAP_TLS', 'a required STARTTLS not offered');
  const ours = new AppError('E_SYNC_CONFLICT');
  t.equal(classifyImapFailure(ours), ours, 'an AppError passes as it is');
});

t.test('defects and database errors are thrown on, never recorded as an outage', async (t) => {
  const defects: unknown[] = [
    new TypeError("Cannot read properties of undefined (reading 'uid')"),
    // Messages that a text match would have taken for the wire.
    new TypeError('connection is not a function'),
    Object.assign(new Error('database is locked (socket timeout while closed)'), { code: 'SQLITE_BUSY' }),
    Object.assign(new Error('fault injected'), { code: 'SQLITE_CONSTRAINT_TRIGGER' }),
    Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' }),
    Object.assign(new TypeError('The "chunk" argument must be of type string'), { code: 'ERR_INVALID_ARG_TYPE' }),
    coded('InvalidSequenceSet', 'Invalid sequence set value'),
    coded('NoMailboxSelected', 'No mailbox is selected'),
    'a string',
    null,
  ];
  for (const err of defects) {
    let thrown: unknown = 'nothing thrown';
    try {
      classifyImapFailure(err);
    } catch (e) {
      thrown = e;
    }
    t.equal(thrown, err, `${(err as { code?: string })?.code ?? String(err)}: thrown on unchanged`);
  }
});

t.test('every imapflow error code has a decided kind', async (t) => {
  const missing = Object.values(ImapFlowErrorCode).filter((code) => !Object.hasOwn(imapflowCodes, code));
  t.same(missing, [], 'an imapflow upgrade that adds a code is noticed here');
});

t.test('what may be logged of an IMAP failure: codes only', async (t) => {
  const err = Object.assign(new Error('Command failed'), {
    responseStatus: 'NO',
    responseText: 'Subject: secret plans',
    code: 'ParserError2',
    parserContext: { input: 'secret@example.org' },
  });
  const fields = imapFailureFields(err);
  t.same(fields, { type: 'Error', code: 'ParserError2', responseStatus: 'NO', serverResponseCode: null });
  t.notMatch(JSON.stringify(fields), /secret/);
});

t.test('the classifier as a table: BAD, NO, BYE, login, TLS, timeouts', async (t) => {
  const failed = (fields: Record<string, unknown>): Error => Object.assign(new Error('Command failed'), fields);
  const table: Array<[string, unknown, string]> = [
    ['tagged BAD (our malformed command)', failed({ responseStatus: 'BAD', responseText: 'Error in IMAP command UID STORE: Invalid arguments' }), 'defect'],
    ['tagged BAD with a response code', failed({ responseStatus: 'BAD', serverResponseCode: 'CLIENTBUG' }), 'defect'],
    ['tagged NO', failed({ responseStatus: 'NO', responseText: 'Mailbox does not exist' }), 'E_IMAP_PROTOCOL'],
    ['tagged NO [SERVERBUG]', failed({ responseStatus: 'NO', serverResponseCode: 'SERVERBUG' }), 'E_IMAP_PROTOCOL'],
    ['BYE', failed({ responseStatus: 'BYE' }), 'E_IMAP_UNRESPONSIVE'],
    ['connection closed (an early BYE, a cut)', coded('EConnectionClosed'), 'E_IMAP_UNRESPONSIVE'],
    ['login refused', failed({ authenticationFailed: true, responseStatus: 'NO' }), 'E_IMAP_AUTH'],
    ['NO [AUTHENTICATIONFAILED]', failed({ responseStatus: 'NO', serverResponseCode: 'AUTHENTICATIONFAILED' }), 'E_IMAP_AUTH'],
    ['self-signed certificate', coded('DEPTH_ZERO_SELF_SIGNED_CERT'), 'E_IMAP_TLS'],
    ['expired certificate', coded('CERT_HAS_EXPIRED'), 'E_IMAP_TLS'],
    ['wrong host name', coded('ERR_TLS_CERT_ALTNAME_INVALID'), 'E_IMAP_TLS'],
    ['STARTTLS not offered', failed({ tlsFailed: true }), 'E_IMAP_TLS'],
    ['connect timeout', coded('CONNECT_TIMEOUT'), 'E_IMAP_UNRESPONSIVE'],
    ['greeting timeout', coded('GREETING_TIMEOUT'), 'E_IMAP_UNRESPONSIVE'],
    ['socket timeout (a stall)', coded('ETIMEOUT'), 'E_IMAP_UNRESPONSIVE'],
    ['TCP timeout', coded('ETIMEDOUT'), 'E_IMAP_UNRESPONSIVE'],
    ['refused connection', coded('ECONNREFUSED'), 'E_IMAP_UNRESPONSIVE'],
    ['reset', coded('ECONNRESET'), 'E_IMAP_UNRESPONSIVE'],
    ['garbage the parser refused', coded('ParserError4'), 'E_IMAP_PROTOCOL'],
    ['an overlong line', coded('LineTooLarge'), 'E_IMAP_PROTOCOL'],
    ['a literal beyond the limit', coded('LiteralTooLarge'), 'E_IMAP_PROTOCOL'],
    ['an unexpected tag', coded('UnexpectedTag'), 'E_IMAP_PROTOCOL'],
    ['a TypeError', new TypeError('x'), 'defect'],
    ['a sequence set we built wrong', coded('InvalidSequenceSet'), 'defect'],
  ];
  for (const [what, err, expected] of table) {
    let got: string;
    try {
      got = classifyImapFailure(err).code;
    } catch (thrown) {
      got = 'defect';
      if ((err as { responseStatus?: string }).responseStatus === 'BAD') {
        t.type(thrown, ImapCommandRejected, `${what}: thrown as ImapCommandRejected`);
        t.equal((thrown as Error).cause, err, `${what}: the original error is its cause`);
        t.notMatch((thrown as Error).message, /UID STORE|Invalid arguments/, `${what}: the message does not quote the command or the server`);
      } else {
        t.equal(thrown, err, `${what}: thrown on unchanged`);
      }
    }
    t.equal(got, expected, what);
  }
});
