/** Header values: message ids, dates, addresses, Content-Type parameters, raw 8-bit text. */
import t from 'tap';
import { readHeaderBlock } from '../../../actors/mime-parse/header-block.ts';
import { sentAt } from '../../../actors/mime-parse/date.ts';
import { addresses } from '../../../actors/mime-parse/addresses.ts';
import { decodeText, messageIds, ownId, references, structured } from '../../../actors/mime-parse/header-values.ts';

t.test('message ids are normalised to <id>', async (t) => {
  t.equal(ownId('<a@b>'), '<a@b>');
  t.equal(ownId('  a@b  '), '<a@b>', 'brackets added to a bare id');
  t.equal(ownId('<a@b> (added by postmaster)'), '<a@b>');
  t.equal(ownId('<"x y"@b>'), '<"xy"@b>', 'folding white space inside an id removed');
  t.equal(ownId(''), null);
  t.equal(ownId(`<${'x'.repeat(2_000)}@b>`), null, 'an absurdly long id is dropped');
  t.same(messageIds('<p@x> (message of Tuesday)'), ['<p@x>']);
  t.same(messageIds('Your message of Tuesday'), [], 'no id in prose');
  t.same(references('<a@x> <b@x>\t<a@x> <c@x>'), ['<a@x>', '<b@x>', '<c@x>'], 'duplicates dropped, order kept');
  const many = Array.from({ length: 300 }, (_, i) => `<r${i}@x>`).join(' ');
  const kept = references(many);
  t.equal(kept.length, 100);
  t.equal(kept[0], '<r0@x>', 'the root is kept');
  t.equal(kept[99], '<r299@x>', 'and the nearest ancestors');
});

t.test('dates', async (t) => {
  t.equal(sentAt('Tue, 1 Jul 2003 10:52:37 +0200'), Date.UTC(2003, 6, 1, 8, 52, 37));
  t.equal(sentAt('Mon, 2 Sep 2002 13:22:17 -0700 (PDT)'), Date.UTC(2002, 8, 2, 20, 22, 17));
  t.equal(sentAt('Wed, 20 Sep 1995 00:19:00 (EDT) -0400'), Date.UTC(1995, 8, 20, 4, 19, 0), 'a comment before the zone');
  t.equal(sentAt('Thu, 22 Aug 0102 12:07:35 +0800'), Date.UTC(2002, 7, 22, 4, 7, 35), 'the Y2K-era year 0102');
  t.equal(sentAt('18 Oct 02 22:48 EDT'), Date.UTC(2002, 9, 19, 2, 48, 0), 'two-digit year, no seconds, named zone');
  t.equal(sentAt('Thu, 29 Aug 2002 15:36:58 +-0500'), Date.UTC(2002, 7, 29, 20, 36, 58), '"+-0500" read as -0500');
  t.equal(sentAt('Sun, 26 May 2002 20:43:57 Eastern Daylight Time'), Date.UTC(2002, 4, 27, 0, 43, 57));
  t.equal(sentAt('Thu, 9 Apr 2006 23:34:45 JST'), Date.UTC(2006, 3, 9, 14, 34, 45));
  t.equal(sentAt('2002-09-14T02:29:32Z'), Date.UTC(2002, 8, 14, 2, 29, 32), 'other shapes through Date.parse');
  for (const bad of ['Whenever', '', 'Wed, 15 Dec 2010    59:10 -0500', 'Mon, 30 Jun 3609 15:33:50 +0600', 'Tue, 1 Foo 2003 10:00:00 +0000']) {
    t.equal(sentAt(bad), null, JSON.stringify(bad));
  }
  t.equal(sentAt(null), null);
});

t.test('addresses', async (t) => {
  t.same(addresses(['MAILER-DAEMON'], null), [{ name: '', address: 'MAILER-DAEMON' }], 'a lone token is an address');
  t.same(addresses(['John Smith'], null), [{ name: 'John Smith', address: '' }]);
  t.same(
    addresses(['a@x.org', 'b@y.org'], null).map((a) => a.address),
    ['a@x.org', 'b@y.org'],
    'repeated headers are joined',
  );
  t.same(addresses(['foo@bar.example (Foo Bar)'], null), [{ name: 'Foo Bar', address: 'foo@bar.example' }]);
  t.same(addresses(['"=?utf-8?B?w6nDqQ==?=" <E@E.EXAMPLE>'], null), [{ name: 'éé', address: 'E@e.example' }], 'the domain is lower-cased, not the local part');
  t.same(addresses([Buffer.from('Jürgen <j@x.de>', 'utf8').toString('latin1')], null), [{ name: 'Jürgen', address: 'j@x.de' }], 'raw UTF-8');
  t.same(addresses([Buffer.from('J\xfcrgen <j@x.de>', 'latin1').toString('latin1')], null)[0]!.name, 'Jürgen', 'raw Latin-1');
  t.same(addresses(['<<>>,,;;'], null).length <= 1, true, 'garbage does not throw');
});

t.test('Content-Type parameters and raw 8-bit text', async (t) => {
  t.same(structured('Text/HTML; Charset="UTF-8"; boundary="Abc"', null), { value: 'text/html', params: { charset: 'UTF-8', boundary: 'Abc' } });
  t.same(structured('application/pdf name="Inv.pdf"', null), { value: 'application/pdf', params: { name: 'Inv.pdf' } }, 'a missing semicolon');
  t.equal(structured(`attachment; filename*=iso-8859-1''caf%E9.txt`, null).params.filename, 'café.txt');
  t.equal(structured('attachment; filename="=?utf-8?Q?caf=C3=A9.txt?="', null).params.filename, 'café.txt');
  t.equal(decodeText(Buffer.from('\x1b$B$3$s$K$A$O\x1b(B', 'latin1').toString('latin1'), null), 'こんにちは', 'raw ISO-2022-JP');
  t.equal(decodeText(Buffer.from([0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4]).toString('latin1'), 'koi8-r'), 'Привет', 'raw 8-bit in the body charset');
});

t.test('header blocks', async (t) => {
  const raw = Buffer.from('Subject: one\r\n two\r\nX-A: 1\r\nbroken line\r\nX-B: 2\r\n\r\nbody', 'latin1');
  const block = readHeaderBlock(raw, 0, raw.length, 1024);
  t.same(block.fields.get('subject'), ['one two']);
  t.same(block.fields.get('x-a'), ['1 broken line'], 'an unindented line before the empty line continues the field');
  t.equal(raw.toString('latin1', block.bodyStart), 'body');
  const noSeparator = Buffer.from('Subject: x\nHello there,\nhow are you', 'latin1');
  const open = readHeaderBlock(noSeparator, 0, noSeparator.length, 1024);
  t.equal(open.count, 1);
  t.equal(noSeparator.toString('latin1', open.bodyStart), 'Hello there,\nhow are you', 'without an empty line, the first non-field line starts the body');
});
