/**
 * Addresses as the configuration reads them: loopback hosts (where clear
 * text is allowed) and bind addresses.
 */
import t from 'tap';
import { isLoopbackHost, isWildcardAddress } from '../../config/ip-address.ts';
import { problemLines } from './fixtures.ts';

t.test('loopback hosts', (t) => {
  for (const host of ['localhost', 'db.localhost', '127.0.0.1', '127.8.9.10', '::1', '[::1]', '::ffff:127.0.0.1']) t.ok(isLoopbackHost(host), host);
  for (const host of ['example.org', '10.0.0.1', '::', '0.0.0.0', 'localhost.example.org', '128.0.0.1']) t.notOk(isLoopbackHost(host), host);
  t.end();
});

t.test('wildcards', (t) => {
  t.ok(isWildcardAddress('0.0.0.0'));
  t.ok(isWildcardAddress('::'));
  t.notOk(isWildcardAddress('127.0.0.1'));
  t.end();
});

t.test('a bind address is an IP address, not a host name', (t) => {
  t.same(problemLines({ HealthEndpoints: { BindAddress: '::' } }), []);
  t.same(problemLines({ HealthEndpoints: { BindAddress: 'localhost' } }), [
    'HealthEndpoints:BindAddress: must be an IP address (0.0.0.0 for every IPv4 address, :: for every address)',
  ]);
  t.end();
});
