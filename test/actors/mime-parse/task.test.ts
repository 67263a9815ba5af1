/**
 * The mime-parse pool task answers through createPool with the raw bytes
 * moved, not copied; and nothing it writes, in any thread, carries content.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { ParseReply } from '../../../actors/mime-parse/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import { createPool } from '../../../runtime/pool/pool.ts';

const entry = new URL('../../../actors/mime-parse/task.ts', import.meta.url);

t.test('the pool parses a moved buffer and answers ParseReply', async (t) => {
  const pool = createPool({ id: 'mime-parse', entry, minThreads: 1, maxThreads: 2 });
  t.teardown(() => pool.close());
  const raw = new Uint8Array(Buffer.from('From: Ann <ann@example.com>\r\nSubject: Pool\r\nMessage-ID: <p@x>\r\n\r\nHello from a pool.\r\n'));
  const reply = await pool.ask({ type: 'mime-parse.parse', account: 'acct-1', raw }, { transfer: [raw.buffer], reply: ParseReply });
  t.equal(raw.byteLength, 0, 'the raw message was moved to the pool thread');
  t.ok(reply.ok);
  if (reply.ok) {
    t.equal(reply.message.subject, 'Pool');
    t.equal(reply.message.bodyText, 'Hello from a pool.');
    t.same(reply.message.from, [{ name: 'Ann', address: 'ann@example.com' }]);
  }
  const junk = new Uint8Array(16);
  t.same(await pool.ask({ type: 'mime-parse.parse', account: 'acct-1', raw: junk }, { transfer: [junk.buffer], reply: ParseReply }), {
    ok: false,
    unreadable: true,
    reason: 'no-header',
  });
  const refused = await pool.ask({ type: 'mime-parse.parse', raw: new Uint8Array(1) }).catch((err: unknown) => err);
  t.ok(refused instanceof AppError && refused.code === 'E_PROTOCOL_INVALID', 'a request without account is refused');
});

t.test('nothing about the content reaches the output of any thread', async (t) => {
  const marker = `privacy${Date.now().toString(36)}marker`;
  const child = fileURLToPath(new URL('./privacy-child.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../../../', import.meta.url));
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, marker], { cwd, timeout: 60_000 });
  const output = stdout + stderr;
  t.match(output, /protocol\.invalid/, 'the refused request was logged, so logs were captured');
  t.notMatch(output, marker, 'no subject, address, body, file name or boundary was written');
});
