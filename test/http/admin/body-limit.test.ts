/**
 * The administrative listener's body limits (docs/admin-api.md "The pipeline",
 * Body; issue 11, point 3) through a service started for real (a private
 * Dovecot behind one account), asked by undici: the refresh-token route takes
 * 16 KB, every other write 4 KB (the rewind route here); past either, declared
 * by Content-Length or arriving chunked and growing past it, the answer is the
 * 413 problem document naming the limit, with `Connection: close`, and the
 * client reads it rather than a reset. Nothing refused is stored or logged.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { request } from 'undici';
import { newKeyRing } from '../../../runtime/keyring/keyring.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const KEY = `mc_${randomUUID().replaceAll('-', '')}`;
const TOKEN = `1//refresh-${randomUUID()}`;

/** A JSON body of exactly `size` bytes: `fields` padded with whitespace. */
function jsonOf(fields: Record<string, unknown>, size: number): Buffer {
  const text = JSON.stringify(fields);
  return Buffer.concat([Buffer.from(text), Buffer.alloc(size - text.length, 0x20)]);
}

async function* chunks(body: Buffer, size = 1024): AsyncGenerator<Buffer> {
  for (let at = 0; at < body.length; at += size) yield body.subarray(at, at + size);
}

t.test('16 KB for the refresh token, 4 KB for other writes; past them a 413 the client reads', async (t) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  writeFileSync(join(dir, 'operator.key'), KEY, { mode: 0o600 });
  writeFileSync(join(dir, 'keyring.json'), newKeyRing(), { mode: 0o600 });
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { Enabled: false },
    DataEncryption: { KeyRing: `file:${join(dir, 'keyring.json')}` },
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'operator', SecretReference: `file:${join(dir, 'operator.key')}`, Lifetime: 'NoLimit' } }],
    },
  });
  t.teardown(() => sync.service.stop());
  const admin = `http://127.0.0.1:${sync.service.admin!.port}/api/admin`;
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

  const post = async (path: string, body: Buffer, chunked: boolean) => {
    const res = await request(`${admin}${path}`, { method: 'POST', headers, body: chunked ? Readable.from(chunks(body)) : body });
    const text = await res.body.text();
    return { status: res.statusCode, text, type: res.headers['content-type'], connection: res.headers.connection };
  };

  const inside = await post('/mailbox/refresh-token', jsonOf({ account: 'pat', refreshToken: TOKEN }, 16 * 1024), false);
  t.equal(inside.status, 204, 'exactly 16 KB is taken by the refresh-token route');
  const insideChunked = await post('/mailbox/refresh-token', jsonOf({ account: 'pat', refreshToken: TOKEN }, 16 * 1024), true);
  t.equal(insideChunked.status, 204, 'chunked too');

  const cases = [
    { path: '/mailbox/refresh-token', limit: 16 * 1024, fields: { account: 'pat', refreshToken: TOKEN } },
    { path: '/mailbox/rewind', limit: 4 * 1024, fields: { account: 'pat', folder: 'inbox' } },
  ];
  for (const { path, limit, fields } of cases) {
    for (const [size, chunked] of [
      [limit + 1, false],
      [limit + 1, true],
      [64 * limit, true],
    ] as const) {
      const what = `${path}: ${size} bytes ${chunked ? 'chunked' : 'declared'}`;
      const answer = await post(path, jsonOf(fields, size), chunked);
      t.equal(answer.status, 413, what);
      t.equal(answer.type, 'application/problem+json', `${what}: a problem document`);
      t.same(
        JSON.parse(answer.text),
        { status: 413, title: 'Request body too large', detail: `Send a body of at most ${limit} bytes.` },
        `${what}: naming the limit`,
      );
      t.equal(answer.connection, 'close', `${what}: the connection closes`);
      t.notOk(answer.text.includes(TOKEN), `${what}: the body is not repeated`);
    }
  }

  const session = await request(`${admin}/session`, { headers: { authorization: `Bearer ${KEY}` } });
  t.equal(session.statusCode, 200, 'the listener serves on afterwards');
  await session.body.text();
  t.same(sync.logs.events('http.failed'), [], 'no refused body is a failure');
  const logs = sync.logs.raw();
  t.notOk(logs.includes(KEY), 'no API key in any log line');
  t.notOk(logs.includes(TOKEN), 'no refresh token in any log line');
});
