/**
 * Real HTTPS clients for tests of the service's TLS listeners: an undici
 * Agent that trusts a test authority, resolves every name to 127.0.0.1 (so
 * a URL names the profile's domain, and SNI and `Host`/`:authority` are what
 * a real agent sends), optionally presents a client certificate, offers
 * HTTP/2 or only HTTP/1.1, and counts the connections it opened and the
 * protocol ALPN chose on each (to assert "the same kept-alive connection").
 *
 * Also the official MCP SDK client over such an agent.
 *
 * @example
 *   const client = tlsClient({ ca: root.cert, http2: true });
 *   const res = await client.request('https://mail.example.org:8443/readyz');
 *   // client.connections() === 1, client.protocols() === ['h2']
 */
import type { LookupFunction } from 'node:net';
import type { SecureVersion } from 'node:tls';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';

/** Every name is 127.0.0.1: tests stay on loopback while URLs carry the profiles' domains. */
export const loopbackLookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
  if (options?.all === true) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

export type TlsClientOptions = {
  /** PEM of the authority the server's chain ends at. */
  ca: string;
  /** A client certificate (PEM) and its key, presented when the server asks. */
  cert?: string;
  key?: string;
  /** Offer h2 beside http/1.1 (the server then chooses h2); default only http/1.1. */
  http2?: boolean;
  maxVersion?: SecureVersion;
};

export type TlsClient = {
  readonly agent: Agent;
  /** How many TLS connections the agent opened so far. */
  connections(): number;
  /** The ALPN protocol of each connection, in the order opened. */
  protocols(): string[];
  /** undici's fetch through this agent (what the MCP SDK client is given). */
  fetch: typeof globalThis.fetch;
  close(): Promise<void>;
};

export function tlsClient(options: TlsClientOptions): TlsClient {
  const protocols: string[] = [];
  const http2 = options.http2 === true;
  const connector = buildConnector({
    ca: options.ca,
    ...(options.cert === undefined ? {} : { cert: options.cert, key: options.key }),
    ...(options.maxVersion === undefined ? {} : { maxVersion: options.maxVersion }),
    lookup: loopbackLookup,
    allowH2: http2,
    // A fresh handshake per connection: a resumed session would hide what the handshake decides.
    maxCachedSessions: 0,
  } as buildConnector.BuildOptions);
  const agent = new Agent({
    allowH2: http2,
    // One connection per origin: successive requests share it, so "the same connection" is observable.
    connections: 1,
    connect(opts, callback) {
      connector(opts, (err, socket) => {
        if (err === null) protocols.push((socket as { alpnProtocol?: string | false }).alpnProtocol || 'http/1.1');
        (callback as (e: Error | null, s: unknown) => void)(err, socket);
      });
    },
  });
  const fetch = ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input as never, { ...(init as object), dispatcher: agent } as never)) as unknown as typeof globalThis.fetch;
  return {
    agent,
    connections: () => protocols.length,
    protocols: () => [...protocols],
    fetch,
    close: () => agent.close(),
  };
}

/** An MCP SDK client connected to `url` through `client`, sending `apiKey` as a bearer credential when given. */
export async function mcpOver(client: TlsClient, url: string, apiKey?: string): Promise<Client> {
  const mcp = new Client({ name: 'tls-service-test', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      fetch: client.fetch,
      ...(apiKey === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }),
    }),
  );
  return mcp;
}
