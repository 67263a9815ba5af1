/**
 * The attachment route over a real node:http server on loopback, asked with
 * undici: a valid capability downloads the bytes with safe headers; every
 * kind of bad capability gets one and the same 404; nothing logs the
 * capability.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import {
  ATTACHMENT_ROUTE,
  isAttachmentPath,
  serveAttachment,
  type AttachmentDownload,
  type AttachmentRouteDeps,
} from '../../../http/attachments/attachment-route.ts';
import { issueCapability, type CapabilityClaims } from '../../../http/attachments/capability.ts';
import { AppError } from '../../../runtime/errors.ts';
import { newKeyRing, parseKeyRing, rotateKeyRing, type KeyRing } from '../../../runtime/keyring/keyring.ts';
import { captureLog } from '../../helpers/log-capture.ts';

const pdf = randomBytes(5000);
const files: Record<string, AttachmentDownload> = {
  '1:0': { filename: 'Quarterly report.pdf', contentType: 'application/pdf', content: pdf },
  '1:1': { filename: 'page.html', contentType: 'text/html', content: Buffer.from('<script>alert(1)</script>') },
  '1:2': { filename: '../../etc/"naïve" r\u00e9sum\u00e9 \u202Efdp.exe', contentType: 'image/svg+xml', content: Buffer.from('<svg/>') },
  '1:3': { filename: null, contentType: 'message/rfc822', content: new Uint8Array(Buffer.from('Subject: x\r\n\r\ny')) },
};

type Setup = {
  base: string;
  ring: KeyRing;
  logText(): string;
  setRing(ring: KeyRing | null): void;
  setFetch(fetch: AttachmentRouteDeps['fetch']): void;
  now: number;
};

async function setup(t: { teardown(fn: () => unknown): void }): Promise<Setup> {
  const capture = captureLog();
  let ring: KeyRing | null = parseKeyRing(newKeyRing());
  const initialRing = ring;
  const now = Date.now();
  let fetch: AttachmentRouteDeps['fetch'] = async (claims: CapabilityClaims) => files[`${claims.messageId}:${claims.index}`] ?? null;
  const deps: AttachmentRouteDeps = {
    keyRing: () => ring,
    fetch: (claims) => fetch(claims),
    log: capture.log,
    now: () => now,
  };
  const server: Server = createServer((req, res) => {
    if (isAttachmentPath(req.url)) {
      void serveAttachment(req, res, deps);
      return;
    }
    res.statusCode = 418;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    ring: initialRing,
    logText: () => capture.raw(),
    setRing: (next) => {
      ring = next;
    },
    setFetch: (next) => {
      fetch = next;
    },
    now,
  };
}

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer };

async function ask(url: string, method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'OPTIONS' = 'GET'): Promise<Answer> {
  const res = await request(url, { method });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

/** Everything a client can tell apart, except the Date header (and any other header named). */
function observable(answer: Answer, ignored: readonly string[] = ['date']): unknown {
  const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !ignored.includes(name)));
  return { status: answer.status, headers, body: answer.body.toString('base64') };
}

t.test('a valid capability downloads the attachment with safe headers', async (t) => {
  const s = await setup(t);
  const token = issueCapability(s.ring, { messageId: 1, index: 0, accountId: 'alice' }, { now: s.now });
  const answer = await ask(`${s.base}/attachments/${token}`);
  t.equal(answer.status, 200);
  t.ok(answer.body.equals(pdf), 'the bytes');
  t.equal(answer.headers['content-type'], 'application/pdf');
  t.equal(answer.headers['content-length'], String(pdf.length));
  t.equal(answer.headers['content-disposition'], `attachment; filename="Quarterly report.pdf"; filename*=UTF-8''Quarterly%20report.pdf`);
  t.equal(answer.headers['cache-control'], 'no-store');
  t.equal(answer.headers['x-content-type-options'], 'nosniff');
  t.match(answer.headers['content-security-policy'], /sandbox/);

  const head = await ask(`${s.base}/attachments/${token}`, 'HEAD');
  t.equal(head.status, 200);
  t.equal(head.body.length, 0, 'HEAD has no body');
  // undici closes the connection after a HEAD (a guard against servers that send a body), so the connection headers differ.
  const perConnection = ['date', 'connection', 'keep-alive'];
  t.same(observable({ ...head, body: answer.body }, perConnection), observable(answer, perConnection), 'HEAD has the headers of GET');

  const withQuery = await ask(`${s.base}/attachments/${token}?download=1`);
  t.ok(withQuery.body.equals(pdf), 'a query string is ignored');
});

t.test('types a browser would render are served as octet-stream, names made safe', async (t) => {
  const s = await setup(t);
  const link = (index: number) => `${s.base}/attachments/${issueCapability(s.ring, { messageId: 1, index, accountId: 'alice' }, { now: s.now })}`;
  const html = await ask(link(1));
  t.equal(html.headers['content-type'], 'application/octet-stream');
  t.equal(html.headers['content-disposition'], `attachment; filename="page.html"; filename*=UTF-8''page.html`);
  const svg = await ask(link(2));
  t.equal(svg.headers['content-type'], 'application/octet-stream');
  t.equal(
    svg.headers['content-disposition'],
    `attachment; filename="_na_ve_ r_sum_ fdp.exe"; filename*=UTF-8''%22na%C3%AFve%22%20r%C3%A9sum%C3%A9%20fdp.exe`,
    'no directory, quotes and non-ASCII kept only in filename*, the right-to-left override dropped',
  );
  const eml = await ask(link(3));
  t.equal(eml.headers['content-type'], 'application/octet-stream');
  t.equal(eml.headers['content-disposition'], `attachment; filename="attachment.eml"; filename*=UTF-8''attachment.eml`);
  t.equal(eml.body.toString(), 'Subject: x\r\n\r\ny');
});

t.test('expired, forged, orphaned, malformed and misdirected capabilities get one identical 404', async (t) => {
  const s = await setup(t);
  const valid = issueCapability(s.ring, { messageId: 1, index: 0, accountId: 'alice' }, { now: s.now });
  const expired = issueCapability(s.ring, { messageId: 1, index: 0, accountId: 'alice' }, { now: s.now - 10 * 60_000 });
  const forged = `${valid.slice(0, 40)}${valid[40] === 'A' ? 'B' : 'A'}${valid.slice(41)}`;
  const orphaned = issueCapability(s.ring, { messageId: 2, index: 0, accountId: 'alice' }, { now: s.now });
  const outsideList = issueCapability(s.ring, { messageId: 1, index: 9, accountId: 'alice' }, { now: s.now });
  const foreign = issueCapability(parseKeyRing(newKeyRing()), { messageId: 1, index: 0, accountId: 'alice' }, { now: s.now });
  t.not(forged, valid);

  const answers: Array<[string, Answer]> = [
    ['expired', await ask(`${s.base}/attachments/${expired}`)],
    ['forged', await ask(`${s.base}/attachments/${forged}`)],
    ['orphaned', await ask(`${s.base}/attachments/${orphaned}`)],
    ['index outside the list', await ask(`${s.base}/attachments/${outsideList}`)],
    ['another deployment', await ask(`${s.base}/attachments/${foreign}`)],
    ['malformed', await ask(`${s.base}/attachments/not-a-capability`)],
    ['empty', await ask(`${s.base}/attachments/`)],
    ['a deeper path', await ask(`${s.base}/attachments/${valid}/more`)],
    ['percent-encoded', await ask(`${s.base}/attachments/%41${valid.slice(1)}`)],
    ['POST', await ask(`${s.base}/attachments/${valid}`, 'POST')],
    ['PUT', await ask(`${s.base}/attachments/${valid}`, 'PUT')],
    ['DELETE', await ask(`${s.base}/attachments/${valid}`, 'DELETE')],
    ['OPTIONS', await ask(`${s.base}/attachments/${valid}`, 'OPTIONS')],
  ];
  const rotated = parseKeyRing(rotateKeyRing(newKeyRing()));
  s.setRing(rotated);
  answers.push(['a key the ring no longer holds', await ask(`${s.base}/attachments/${valid}`)]);
  s.setRing(null);
  answers.push(['no key ring configured', await ask(`${s.base}/attachments/${valid}`)]);

  const reference = observable(answers[0]![1]);
  t.match(reference, { status: 404, body: '', headers: { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-length': '0' } });
  t.notOk((answers[0]![1].headers as Record<string, unknown>)['content-type'], 'no content type on an empty answer');
  for (const [name, answer] of answers) t.same(observable(answer), reference, name);

  s.setRing(s.ring);
  t.equal((await ask(`${s.base}/attachments/${valid}`)).status, 200, 'the valid capability was valid all along');
  t.equal((await ask(`${s.base}/attachments/${expired}`, 'HEAD')).status, 404);
});

t.test("a failing read or key ring is a bare 5xx, the error table's status, logged by route template only", async (t) => {
  const s = await setup(t);
  const token = issueCapability(s.ring, { messageId: 1, index: 0, accountId: 'alice' }, { now: s.now });
  s.setFetch(async () => {
    throw new AppError('E_ACTOR_TIMEOUT');
  });
  const busy = await ask(`${s.base}/attachments/${token}`);
  t.match(observable(busy), { status: 504, body: '', headers: { 'cache-control': 'no-store' } });
  s.setFetch(async () => {
    throw new Error('the pool fell over');
  });
  t.equal((await ask(`${s.base}/attachments/${token}`)).status, 500);
  const log = s.logText();
  t.match(log, /"route":"\/attachments\/\{capability\}"/);
  t.match(log, /"status":504/);
  t.match(log, /"status":500/);
  t.notOk(log.includes(token.slice(0, 12)), 'no part of the capability is logged');
});

t.test('a key ring that cannot be read is a bare error before the token is looked at', async (t) => {
  const capture = captureLog();
  const server = createServer((req, res) => {
    void serveAttachment(req, res, {
      keyRing: () => {
        throw new AppError('E_CONFIG_SECRET_UNREADABLE');
      },
      fetch: async () => null,
      log: capture.log,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const answer = await ask(`http://127.0.0.1:${port}/attachments/SOMETOKENVALUE123`);
  t.equal(answer.status, 500, 'an unreadable secret is not retryable');
  t.notOk(capture.raw().includes('SOMETOKENVALUE123'));
  t.ok(capture.raw().includes(`"route":"${ATTACHMENT_ROUTE}"`), 'logged under the route template');
});

t.test('nothing a download does puts the capability into the log', async (t) => {
  const s = await setup(t);
  const tokens = [0, 1, 2, 3, 9].map((index) => issueCapability(s.ring, { messageId: 1, index, accountId: 'alice' }, { now: s.now }));
  for (const token of tokens) {
    await ask(`${s.base}/attachments/${token}`);
    await ask(`${s.base}/attachments/${token}`, 'HEAD');
    await ask(`${s.base}/attachments/${token}`, 'POST');
  }
  const log = s.logText();
  t.equal(log, '', 'no line per download or refusal');
  for (const token of tokens) t.notOk(log.includes(token.slice(0, 12)));
});

t.test('the dispatch test matches the route and nothing else', async (t) => {
  t.ok(isAttachmentPath('/attachments/abc'));
  t.ok(isAttachmentPath('/attachments/'));
  t.ok(isAttachmentPath('/attachments/abc?x=1'));
  t.notOk(isAttachmentPath('/attachments'));
  t.notOk(isAttachmentPath('/mcp'));
  t.notOk(isAttachmentPath('/x/attachments/abc'));
  t.notOk(isAttachmentPath(undefined));
  t.equal(ATTACHMENT_ROUTE, '/attachments/{capability}');
});
