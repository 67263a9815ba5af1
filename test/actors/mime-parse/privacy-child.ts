/**
 * Child process of task.test.ts: runs the mime-parse pool over messages full
 * of marker strings (readable, unreadable and a request that fails the
 * protocol), so the parent can read everything the process wrote.
 */
import { createPool } from '../../../runtime/pool/pool.ts';
import { AppError } from '../../../runtime/errors.ts';

const marker = process.argv[2]!;
const messages = [
  `From: "${marker} Name" <${marker}@example.com>\r\nSubject: ${marker} subject\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>${marker} body</p>\r\n--b\r\nContent-Type: application/pdf; name="${marker}.pdf"\r\n\r\n${marker}\r\n--b--\r\n`,
  `${marker} no header at all\r\n`,
  `Subject: ${marker}\r\nContent-Type: multipart/alternative; boundary="${marker}"\r\n\r\n--${marker}\r\n\r\n${'\u0000'.repeat(64)}${marker}`,
];

const pool = createPool({ id: 'mime-parse', entry: new URL('../../../actors/mime-parse/task.ts', import.meta.url), minThreads: 2, maxThreads: 2 });
for (const text of messages) {
  const raw = new Uint8Array(Buffer.from(text, 'latin1'));
  await pool.ask({ type: 'mime-parse.parse', account: marker, raw }, { transfer: [raw.buffer] });
}
try {
  await pool.ask({ type: 'mime-parse.parse', raw: new Uint8Array(Buffer.from(marker)), note: marker });
} catch (err) {
  if (!(err instanceof AppError) || err.code !== 'E_PROTOCOL_INVALID') throw err;
}
await pool.close();
