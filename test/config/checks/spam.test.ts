/**
 * `Spam`: what startup and check-config refuse (the same problem list): an
 * engine address in clear text to another machine, a keyword the change
 * journal would refuse, a trusted server named twice, retry waits in the
 * wrong order.
 */
import t from 'tap';
import { problemLines } from '../fixtures.ts';

t.test('the defaults are accepted', (t) => {
  t.same(problemLines({ Spam: {} }), []);
  t.same(problemLines({ Spam: { Engine: { Address: 'https://rspamd.example.org:11333' }, TrustedServers: [{ Host: 'mx.example.org' }] } }), []);
  t.end();
});

t.test('refusals name the setting and what to change', (t) => {
  t.same(problemLines({ Spam: { Engine: { Address: 'http://rspamd.example.org:11333' } } }), [
    'Spam:Engine:Address: must be an https URL: clear text is only allowed to a loopback host',
  ]);
  t.same(problemLines({ Spam: { Keyword: 'junk mail' } }), ['Spam:Keyword: must be an IMAP keyword: no space, quote, parenthesis, brace, %, *, \\ or ]']);
  t.same(problemLines({ Spam: { TrustedServers: [{ Host: 'mx.example.org' }, { Host: 'mx.example.org' }] } }), [
    'Spam:TrustedServers:1:Host: repeats a server named earlier',
  ]);
  t.same(problemLines({ Spam: { TrustedServers: [{ Host: '10.0.0.1' }] } }), [
    'Spam:TrustedServers:0:Host: must be one DNS name in A-label form, lower case (e.g. mail.example.org); no IP address or wildcard',
  ]);
  t.same(problemLines({ Spam: { Engine: { RetryDelay: '00:05:00', RetryDelayMaximum: '00:01:00' } } }), [
    'Spam:Engine:RetryDelayMaximum: must not be shorter than RetryDelay',
  ]);
  t.end();
});
