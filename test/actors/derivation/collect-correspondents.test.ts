/**
 * Who a message makes a collected contact (actors/derivation/collect-correspondents.ts),
 * from real parses of raw mail: senders of received mail, recipients of sent mail,
 * and what is left out (lists and machine mail, no-reply and role addresses, the
 * owner's own addresses, malformed addresses, drafts, junk and trash).
 */
import t from 'tap';
import { correspondentsOf, folderRoleOf, isNoReply, ownAddressesOf } from '../../../actors/derivation/collect-correspondents.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import type { DerivedMessage } from '../../../runtime/store/mailbox/derived-message.ts';

function parsed(headers: string): DerivedMessage {
  const reply = parseMessage(Buffer.from(`${headers.trim().split('\n').join('\r\n')}\r\nSubject: s\r\n\r\nbody\r\n`), 'acct');
  if (!reply.ok) throw new Error('unreadable test message');
  return reply.message;
}

const own = ownAddressesOf(['Owner@Example.org']);

t.test('received mail: its From, with the display name; Reply-To and other recipients are not read', async (t) => {
  const m = parsed('From: Sato Hiroshi <sato@example.jp>\nReply-To: desk@example.jp\nTo: owner@example.org, Kim <kim@example.net>');
  t.same(correspondentsOf(m, 'received', own), [{ address: 'sato@example.jp', name: 'Sato Hiroshi' }]);
});

t.test('sent mail: To, Cc and Bcc, each address once, never the owner', async (t) => {
  const m = parsed(
    'From: owner@example.org\nTo: Kim <kim@example.net>, OWNER@example.org\nCc: carol@example.net, "Kim Again" <KIM@example.net>\nBcc: Dan <dan@example.net>',
  );
  t.same(correspondentsOf(m, 'sent', own), [
    { address: 'kim@example.net', name: 'Kim' },
    { address: 'carol@example.net', name: null },
    { address: 'dan@example.net', name: 'Dan' },
  ]);
});

t.test('a name missing the first time is taken from a later mention of the same address', async (t) => {
  const m = parsed('From: owner@example.org\nTo: kim@example.net, Kim Lee <kim@example.net>');
  t.same(correspondentsOf(m, 'sent', own), [{ address: 'kim@example.net', name: 'Kim Lee' }]);
});

t.test('a display name that is an address is no name', async (t) => {
  const m = parsed('From: "sato@example.jp" <sato@example.jp>');
  t.same(correspondentsOf(m, 'received', own), [{ address: 'sato@example.jp', name: null }]);
});

t.test('mailing-list and machine mail collects nobody', async (t) => {
  for (const header of [
    'List-Id: Team <team.lists.example.org>',
    'List-Unsubscribe: <mailto:leave@lists.example.org>',
    'Precedence: bulk',
    'Precedence: list',
    'Precedence: junk',
    'Auto-Submitted: auto-replied',
    'Auto-Submitted: auto-generated',
  ]) {
    const m = parsed(`From: Poster <poster@example.org>\n${header}`);
    t.same(correspondentsOf(m, 'received', own), [], header);
  }
  const person = parsed('From: Poster <poster@example.org>\nAuto-Submitted: no\nPrecedence: first-class');
  t.equal(correspondentsOf(person, 'received', own).length, 1, 'Auto-Submitted: no is a person writing');
});

t.test('no-reply and role addresses are left out', async (t) => {
  for (const address of [
    'noreply@shop.example.com',
    'no-reply@example.com',
    'no_reply@example.com',
    'notifications-noreply@example.com',
    'donotreply@example.com',
    'do-not-reply@example.com',
    'MAILER-DAEMON@example.com',
    'postmaster@example.com',
    'bounce@example.com',
    'bounces+abc=example.org@example.com',
    'team-bounces@lists.example.org',
  ]) {
    t.ok(isNoReply(address), address);
    t.same(correspondentsOf(parsed(`From: ${address}`), 'received', own), [], address);
  }
  for (const address of ['norma@example.com', 'replies@example.com', 'bouncer.bob@example.com', 'post@example.com']) {
    t.notOk(isNoReply(address), `${address} is a person`);
  }
});

t.test('malformed addresses are left out', async (t) => {
  const m = parsed('From: owner@example.org\nTo: undisclosed-recipients:;, someone, kim@localhost, "x" <>, ok@example.net');
  t.same(
    correspondentsOf(m, 'sent', own).map((c) => c.address),
    ['ok@example.net'],
  );
});

t.test('folder roles: the sent folder by its alias; drafts, junk, spam and trash collect nobody', async (t) => {
  t.equal(folderRoleOf('sent'), 'sent');
  for (const alias of ['drafts', 'junk', 'spam', 'trash']) t.equal(folderRoleOf(alias), 'none', alias);
  for (const alias of ['inbox', 'archive', 'work']) t.equal(folderRoleOf(alias), 'received', alias);
  const m = parsed('From: Sato <sato@example.jp>\nTo: kim@example.net');
  t.same(correspondentsOf(m, 'none', own), []);
});
