/**
 * Messages the spam tests classify: GTUBE (every engine's test pattern,
 * judged spam at the reject score) and a plain message an engine leaves
 * alone. CRLF line ends, as a mail server stores them.
 */

const crlf = (lines: readonly string[]): string => `${lines.join('\r\n')}\r\n`;

/** The Generic Test for Unsolicited Bulk Email (SpamAssassin's, honoured by rspamd). */
export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

export type TestMessage = {
  subject: string;
  from?: string;
  messageId?: string;
  headersAbove?: readonly string[];
  headersBelow?: readonly string[];
  body?: string;
};

/**
 * One message: `headersAbove` go first (as a receiving server prepends its
 * own), then `Received:` lines, then the sender's headers with
 * `headersBelow` among them.
 */
export function message(m: TestMessage, received: readonly string[] = []): string {
  const id = m.messageId ?? `<${Math.random().toString(36).slice(2)}@sender.example>`;
  return crlf([
    ...(m.headersAbove ?? []),
    ...received,
    `From: ${m.from ?? 'Sender <sender@sender.example>'}`,
    'To: Owner <owner@example.test>',
    `Subject: ${m.subject}`,
    `Message-ID: ${id}`,
    'Date: Sat, 28 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(m.headersBelow ?? []),
    '',
    m.body ?? 'Hello,\r\n\r\nthe minutes of Tuesday are attached to the shared folder.\r\n\r\nRegards',
  ]);
}

export const GTUBE_MESSAGE = message({ subject: 'Test spam mail (GTUBE)', body: `This is the GTUBE.\r\n\r\n${GTUBE}` });
export const CLEAN_MESSAGE = message({ subject: 'Minutes of Tuesday' });
