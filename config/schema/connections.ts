/**
 * `Connections` of an HTTP listener section (McpEndpoint, AdminEndpoint,
 * HealthEndpoints each carry their own): how long a client may take to send
 * a request, how long an idle keep-alive connection is kept, how many
 * connections are open at once and how large a request's header block may
 * be. These bound slow and abusive clients before any handler runs
 * (docs/security.md "Connection limits"); `RequestTimeout` bounds the
 * handler's time after the request arrived. `ReceiveTimeout` bounds the
 * headers too, so a `HeadersTimeout` above it has no effect (allowed: each
 * bound is checked on its own).
 */
import { z } from 'zod';
import { wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const Connections = z
  .strictObject({
    HeadersTimeout: timeSpan(
      '00:00:01',
      '00:10:00',
      "How long a client may take to send a request's headers; past it the connection gets 408 and is closed",
    ).prefault('00:00:30'),
    ReceiveTimeout: timeSpan(
      '00:00:01',
      '01:00:00',
      'How long a client may take to send a whole request, headers and body; past it the connection gets 408 and is closed (bounds the headers too)',
    ).prefault('00:02:00'),
    IdleTimeout: timeSpan('00:00:01', '00:10:00', 'How long a keep-alive connection may wait idle for its next request before it is closed').prefault(
      '00:01:05',
    ),
    MaxConnections: wholeNumber(1, 100_000, 'Connections open at once on each socket of the section; one more is closed as it is accepted').default(1_000),
    MaxHeaderBytes: wholeNumber(1_024, 65_536, 'Bytes of one request line and header block; more is answered 431 and the connection closed').default(16_384),
    MaxHeaderCount: wholeNumber(10, 1_000, 'Header fields of one request read; the ones past it are dropped').default(100),
  })
  .meta({ description: 'Bounds on slow and abusive clients, per socket of the section' });

export type ConnectionLimits = z.infer<typeof Connections>;
