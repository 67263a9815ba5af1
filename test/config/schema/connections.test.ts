/**
 * `Connections` of the HTTP listener sections: the defaults written in
 * docs/configuration.md, and the rule between the two receive bounds.
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

t.test('HeadersTimeout longer than ReceiveTimeout is refused, naming the setting', (t) => {
  for (const section of ['McpEndpoint', 'AdminEndpoint', 'HealthEndpoints']) {
    t.same(problemLines({ [section]: { Connections: { HeadersTimeout: '00:01:00', ReceiveTimeout: '00:00:30' } } }), [
      `${section}:Connections:HeadersTimeout: HeadersTimeout must not be longer than ReceiveTimeout`,
    ]);
    t.same(problemLines({ [section]: { Connections: { HeadersTimeout: '00:00:30', ReceiveTimeout: '00:00:30' } } }), [], 'equal is allowed');
  }
  t.match(problemLines({ McpEndpoint: { Connections: { MaxConnections: 0 } } }), [/^McpEndpoint:Connections:MaxConnections: must be between 1 and 100000/]);
  t.end();
});
