/**
 * The Prometheus scrape listener's server: `GET /metrics` (and `HEAD`) is
 * answered with the text exposition of `@opentelemetry/exporter-prometheus`
 * (the handler of runtime/telemetry/sdk.ts); anything else is an empty 404.
 * No credential: it serves counts labelled with configured identifiers
 * only, and listens on a loopback address unless configured otherwise
 * (docs/operations.md "Telemetry"). Opened with the connection bounds of
 * every listener (listen.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { httpServer } from './listen.ts';

export function scrapeServer(handler: (request: IncomingMessage, response: ServerResponse) => void): Server {
  return httpServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path === '/metrics' && (request.method === 'GET' || request.method === 'HEAD')) {
      handler(request, response);
      return;
    }
    response.statusCode = 404;
    response.setHeader('content-length', '0');
    response.end();
  });
}
