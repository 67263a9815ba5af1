/**
 * The loopback redirect catcher of interactive sign-in (RFC 8252 7.3; client
 * rule 6): an HTTP listener on the redirect address (`http://127.0.0.1:8765/`
 * unless `--redirect-uri` names another loopback address) that waits for the
 * browser's one redirect, answers it with a short page, and closes.
 *
 * The redirect is judged here: a `state` other than the one this sign-in
 * issued ends the sign-in at once (a page on another site may have sent the
 * browser there); `error` (the person refused, or the server did) ends it
 * with its registered code. Any other path (a favicon) is answered 404 and
 * the wait goes on.
 */
import { createServer, type Server } from 'node:http';
import { isIP } from 'node:net';
import { CliFailure, usage } from '../failure.ts';

export const DEFAULT_REDIRECT_URI = 'http://127.0.0.1:8765/';

export type RedirectAddress = { readonly uri: string; readonly host: string; readonly port: number; readonly path: string };

/** `--redirect-uri`: only clear-text http to a loopback IP literal with a port (what a public client's loopback redirect is). */
export function parseRedirectUri(text: string): RedirectAddress {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  const host = url?.hostname.replace(/^\[|\]$/g, '') ?? '';
  const loopback = (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (url === null || url.protocol !== 'http:' || !loopback || url.port === '' || url.search !== '' || url.hash !== '' || url.username !== '')
    throw usage('--redirect-uri takes a loopback address with a port, such as http://127.0.0.1:8765/ (http, 127.0.0.1 or [::1], no query).');
  return { uri: url.href, host, port: Number(url.port), path: url.pathname };
}

const PAGE = (title: string, text: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`;

export type Catcher = { readonly code: Promise<string>; close(): Promise<void> };

function failure(sentence: string): CliFailure {
  return new CliFailure(sentence);
}

/** Listens on the redirect address; `code` settles with the authorization code, or fails as the redirect said. */
export async function catchRedirect(address: RedirectAddress, state: string, issuer: string): Promise<Catcher> {
  let settle!: { resolve(code: string): void; reject(err: CliFailure): void };
  const code = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  code.catch(() => {});
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://loopback');
    if (req.method !== 'GET' || url.pathname !== address.path) {
      res.writeHead(404).end();
      return;
    }
    const answer = (status: number, title: string, text: string): void => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', connection: 'close' });
      res.end(PAGE(title, text));
    };
    const params = url.searchParams;
    if (params.get('state') !== state) {
      answer(400, 'Sign-in refused', 'This answer does not belong to the sign-in under way. Nothing was stored.');
      settle.reject(
        failure(`The redirect carried a state this sign-in did not issue (another page sent the browser there); nothing was stored. Log in again.`),
      );
      return;
    }
    const error = params.get('error');
    if (error !== null) {
      const registered = /^[a-z_]{1,64}$/.test(error) ? error : 'error';
      answer(200, 'Sign-in refused', 'The authorization server did not grant access. You can close this window.');
      settle.reject(
        failure(
          registered === 'access_denied'
            ? `The sign-in was refused at ${issuer} (access_denied): access was not granted; nothing was stored.`
            : `The authorization server ${issuer} ended the sign-in (${registered}); nothing was stored.`,
        ),
      );
      return;
    }
    const value = params.get('code');
    if (value === null || value === '') {
      answer(400, 'Sign-in refused', 'The answer carried no authorization code. Nothing was stored.');
      settle.reject(failure(`The redirect from ${issuer} carried no authorization code; nothing was stored.`));
      return;
    }
    answer(200, 'Signed in', 'Mailcairn received the sign-in. You can close this window and return to the terminal.');
    settle.resolve(value);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new CliFailure(`${address.uri} is in use by another program; pass --redirect-uri with another loopback port registered for the client.`)
          : new CliFailure(`The redirect address ${address.uri} cannot be listened on (${err.code ?? 'error'}).`),
      ),
    );
    server.listen(address.port, address.host, () => resolve());
  });
  return {
    code,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // After the page is written: a browser keeping the connection alive must not hold the client open.
        setImmediate(() => server.closeAllConnections());
      }),
  };
}
