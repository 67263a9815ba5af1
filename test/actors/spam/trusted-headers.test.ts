/**
 * The trusted-header stage: a verdict header is believed only when a
 * configured receiving server wrote it (above its own Received: line, on a
 * chain of trusted hops from the top); what a sender wrote is never read.
 */
import t from 'tap';
import { mapScore, trustedRegion, headerFields, trustedVerdict } from '../../../actors/spam/trusted-headers.ts';
import { message } from '../../helpers/spam-messages.ts';

const MX = 'Received: from sender.example (sender.example [192.0.2.1]) by mx.example.org (Postfix) with ESMTPS id 4Q; Sat, 28 Nov 2026 10:00:01 +0000';
const LMTP = 'Received: from mx.example.org by imap.example.org with LMTP id abc; Sat, 28 Nov 2026 10:00:02 +0000';
const OTHER = 'Received: from relay.example by relay.other.example with SMTP; Sat, 28 Nov 2026 09:59:00 +0000';
const hosts = new Set(['mx.example.org', 'imap.example.org']);
const both = ['SpamAssassin', 'Rspamd'] as const;
const raw = (text: string) => Buffer.from(text);

t.test('a verdict the trusted server wrote above its Received: line is believed', (t) => {
  const spam = message({ subject: 'x', headersAbove: ['X-Spam-Status: Yes, score=7.5 required=5.0 tests=FOO'] }, [MX]);
  t.same(trustedVerdict(raw(spam), hosts, both), { score: 1 });
  const ham = message({ subject: 'x', headersAbove: ['X-Spam-Status: No, score=1.0 required=5.0'] }, [MX]);
  t.same(trustedVerdict(raw(ham), hosts, both), { score: 0.2 });
  const rspamd = message({ subject: 'x', headersAbove: ['X-Spamd-Result: default: False [3.00 / 15.00];', '\tR_SPF_ALLOW(-0.20)[+ip4]'] }, [MX]);
  t.same(trustedVerdict(raw(rspamd), hosts, both), { score: 0.2 }, 'folded header, score over the reject score');
  const flag = message({ subject: 'x', headersAbove: ['X-Spam-Flag: YES'] }, [LMTP, MX]);
  t.same(trustedVerdict(raw(flag), hosts, both), { score: 1 }, 'through a chain of trusted hops');
  t.end();
});

t.test("a sender's own verdict header is never read", (t) => {
  const spoofed = message({ subject: 'x', headersBelow: ['X-Spam-Flag: NO', 'X-Spam-Status: No, score=-100 required=5'] }, [MX]);
  t.equal(trustedVerdict(raw(spoofed), hosts, both), null, 'below the trusted hop');
  const forgedHop = message({ subject: 'x', headersBelow: ['X-Spam-Flag: YES'] }, [MX, MX.replace('4Q', 'forged')]);
  t.equal(trustedVerdict(raw(forgedHop), hosts, both), null, 'a second Received: naming the same server is the sender’s');
  const untrusted = message({ subject: 'x', headersAbove: ['X-Spam-Flag: YES'] }, [OTHER, MX]);
  t.equal(trustedVerdict(raw(untrusted), hosts, both), null, 'the topmost hop is not trusted: nothing is');
  const noHop = message({ subject: 'x', headersAbove: ['X-Spam-Flag: YES'] });
  t.equal(trustedVerdict(raw(noHop), hosts, both), null, 'no Received: at all: nothing is trusted');
  const trustedSpam = message({ subject: 'x', headersAbove: ['X-Spam-Flag: YES'] }, [MX]);
  t.equal(trustedVerdict(raw(trustedSpam), new Set(), both), null, 'no server configured');
  t.equal(trustedVerdict(raw(trustedSpam), hosts, ['Rspamd']), null, 'a family not configured is not read');
  t.end();
});

t.test('regions and the mapping', (t) => {
  const fields = headerFields(raw(message({ subject: 'x', headersAbove: ['X-A: 1'] }, [LMTP, 'X-B: 2', MX])));
  t.same(
    trustedRegion(fields, hosts).map((f) => f.name),
    ['x-a', 'x-b'],
  );
  t.equal(mapScore(15, 15), 1);
  t.equal(mapScore(30, 15), 1, 'clamped');
  t.equal(mapScore(-3, 15), 0, 'clamped');
  t.equal(mapScore(2.4, 15), 0.16);
  t.end();
});
