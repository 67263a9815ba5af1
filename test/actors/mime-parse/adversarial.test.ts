/**
 * Inputs built to make a parser do quadratic work or recurse without end
 * finish quickly and answer. The time limit is generous (a loaded CI
 * machine); the work they would take without the bounds is minutes.
 */
import t from 'tap';
import { htmlToText } from '../../../actors/mime-parse/html-text.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { ParseReply } from '../../../actors/mime-parse/protocol.ts';

const LIMIT_MS = 3_000;

t.test('HTML that would be rescanned to its end at every tag', async (t) => {
  const pages: Record<string, string> = {
    'unclosed scripts': '<script>x'.repeat(100_000),
    'unclosed heads': '<head>x'.repeat(100_000),
    'unterminated quotes': "<a x='>y".repeat(50_000) + '<b y=">z'.repeat(50_000),
    'unterminated comments': '<!--'.repeat(200_000),
    'bare angle brackets': '<'.repeat(500_000),
  };
  for (const [name, html] of Object.entries(pages)) {
    const start = performance.now();
    htmlToText(html);
    t.ok(performance.now() - start < LIMIT_MS, name);
  }
});

t.test('MIME that nests, repeats or never ends', async (t) => {
  const messages: Record<string, string> = {
    'a boundary reused at every level': `Content-Type: multipart/mixed; boundary=a\n\n${'--a\nContent-Type: multipart/mixed; boundary=a\n\n'.repeat(50_000)}`,
    'thousands of nested multiparts': Array.from({ length: 3_000 }, (_, i) => `Content-Type: multipart/mixed; boundary=b${i}\n\n--b${i}\n`).join(''),
    'endlessly enclosed messages': `${'Content-Type: message/rfc822\n\n'.repeat(100_000)}body`,
    'half a million empty parts': `Content-Type: multipart/mixed; boundary=a\n\n${'--a\n'.repeat(500_000)}`,
    'a folded header of 200,000 lines': `Subject: x\n${' continued\n'.repeat(200_000)}\nbody`,
    'a 5 MB header line': `Subject: ${'x'.repeat(5_000_000)}\n\nbody`,
    '200,000 recipients': `To: ${'a@b.example, '.repeat(200_000)}\n\nx`,
    'a header of quotes': `To: ${'"'.repeat(100_000)}\n\nx`,
  };
  for (const [name, text] of Object.entries(messages)) {
    const start = performance.now();
    const reply = parseMessage(Buffer.from(text), 'acct');
    t.ok(performance.now() - start < LIMIT_MS, `${name}: in time`);
    t.ok(ParseReply.safeParse(reply).success, `${name}: a valid reply`);
  }
});
