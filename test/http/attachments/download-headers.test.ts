/** The media type and file name a download is sent with: what a sender wrote never reaches a browser as is. */
import t from 'tap';
import { contentDisposition, safeFilename, servedContentType } from '../../../http/attachments/download-headers.ts';

t.test('only allow-listed types are passed on', async (t) => {
  t.equal(servedContentType('application/pdf'), 'application/pdf');
  t.equal(servedContentType(' Image/PNG '), 'image/png', 'compared case-insensitively');
  for (const type of [
    'text/html',
    'application/xhtml+xml',
    'image/svg+xml',
    'text/xml',
    'application/xml',
    'application/javascript',
    'text/javascript',
    'text/css',
    'message/rfc822',
    'multipart/related',
    'application/x-unknown',
    '',
    'text/plain; charset=utf-8',
  ]) {
    t.equal(servedContentType(type), 'application/octet-stream', JSON.stringify(type));
  }
});

t.test('file names are reduced to a safe base name', async (t) => {
  t.equal(safeFilename('report.pdf', 'application/pdf'), 'report.pdf');
  t.equal(safeFilename('C:\\Users\\me\\report.pdf', 'application/pdf'), 'report.pdf', 'a Windows path');
  t.equal(safeFilename('/etc/passwd', 'text/plain'), 'passwd');
  t.equal(safeFilename('..', 'text/plain'), 'attachment.txt', 'nothing but dots');
  t.equal(safeFilename('.bashrc', 'text/plain'), 'bashrc', 'no hidden file');
  t.equal(safeFilename('name. ', 'text/plain'), 'name', 'no trailing dot or space');
  t.equal(safeFilename('a\u0000b\r\nc\td.txt', 'text/plain'), 'abcd.txt', 'controls dropped');
  t.equal(safeFilename('photo\u202Egnp.exe', 'image/png'), 'photognp.exe', 'a right-to-left override dropped');
  t.equal(safeFilename('bad\ud800name.txt', 'text/plain'), 'bad\ufffdname.txt', 'a lone surrogate replaced');
  t.equal(safeFilename(null, 'application/pdf'), 'attachment.pdf');
  t.equal(safeFilename(null, 'application/x-unknown'), 'attachment');
  const long = safeFilename('😀'.repeat(200), 'text/plain');
  t.equal(Array.from(long).length, 150, 'at most 150 characters');
  t.equal(long, '😀'.repeat(150), 'never splitting a surrogate pair');
});

t.test('the disposition is an attachment with an ASCII name and the exact UTF-8 name', async (t) => {
  t.equal(contentDisposition('a.pdf', 'application/pdf'), `attachment; filename="a.pdf"; filename*=UTF-8''a.pdf`);
  t.equal(
    contentDisposition(`Grüße "100%" it's (1)*.txt`, 'text/plain'),
    `attachment; filename="Gr__e _100__ it's (1)*.txt"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%22100%25%22%20it%27s%20%281%29%2A.txt`,
  );
  t.equal(contentDisposition('日本語.txt', 'text/plain'), `attachment; filename="___.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.txt`);
  t.equal(contentDisposition('x;y=z.txt', 'text/plain'), `attachment; filename="x;y=z.txt"; filename*=UTF-8''x%3By%3Dz.txt`);
  for (const value of [contentDisposition('a\r\nSet-Cookie: x=1', 'text/plain'), contentDisposition('😀'.repeat(500), 'text/plain')]) {
    t.match(value, /^[\x20-\x7e]+$/, 'printable ASCII only, so no header can be injected');
  }
});
