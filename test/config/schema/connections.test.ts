/**
 * `Connections` of the HTTP listener sections: the defaults written in
 * docs/configuration.md, and each bound judged on its own.
 */
import t from 'tap';
import { Connections } from '../../../config/schema/connections.ts';
import { problemLines } from '../fixtures.ts';

t.test('defaults: 30 s of headers, 2 min of request, 65 s idle, 1,000 connections, 16 KiB and 100 header fields', (t) => {
  t.same(Connections.parse({}), {
    HeadersTimeout: 30_000,
    ReceiveTimeout: 120_000,
    IdleTimeout: 65_000,
    MaxConnections: 1_000,
    MaxHeaderBytes: 16_384,
    MaxHeaderCount: 100,
  });
  t.end();
});

t.test('each bound on its own: a HeadersTimeout above ReceiveTimeout is allowed (ReceiveTimeout bounds the headers too)', (t) => {
  for (const section of ['McpEndpoint', 'AdminEndpoint', 'HealthEndpoints']) {
    t.same(problemLines({ [section]: { Connections: { HeadersTimeout: '00:01:00', ReceiveTimeout: '00:00:30' } } }), [], section);
  }
  t.match(problemLines({ McpEndpoint: { Connections: { MaxConnections: 0 } } }), [/^McpEndpoint:Connections:MaxConnections: must be between 1 and 100000/]);
  t.end();
});
