/**
 * TLS settings that can be judged without reading a certificate.
 */
import t from 'tap';
import { problemLines, profile } from '../fixtures.ts';

const tls = (endpoints: unknown[], extra: Record<string, unknown> = {}) => ({
  McpEndpoint: { Transport: 'HttpsOnly', Https: { Endpoints: endpoints }, ...extra },
});

t.test('Domain is one DNS name: no IP address, wildcard, upper case or duplicate', (t) => {
  for (const domain of ['10.0.0.1', '::1', '*.example.org', 'Mail.Example.org', 'mail..example.org', 'mail.example.123', 'bücher.example']) {
    t.match(problemLines(tls([profile('p', domain)])).join('\n'), /Domain: must be one DNS name in A-label form/, domain);
  }
  t.same(problemLines(tls([profile('p', 'xn--bcher-kva.example')])), [], 'an A-label is accepted');
  t.same(problemLines(tls([profile('a', 'mail.example.org'), profile('b', 'mail.example.org')])), [
    'McpEndpoint:Https:Endpoints:1:Domain: repeats the domain of McpEndpoint:Https:Endpoints:0',
  ]);
  t.same(problemLines(tls([profile('a', 'a.example.org'), profile('a', 'b.example.org')])), [
    'McpEndpoint:Https:Endpoints:1:Name: repeats the name of McpEndpoint:Https:Endpoints:0',
  ]);
  t.end();
});

t.test('a certificate is a Bundle or a chain beside its key, never both, never half', (t) => {
  const bundle = { Bundle: { Name: 'b', SecretReference: 'file:/etc/tls/b.p12', Password: { Name: 'pw', SecretReference: 'env:P12_PASSWORD' } } };
  t.same(problemLines(tls([{ ...profile('p', 'mail.example.org'), ServerCertificate: bundle }])), []);
  const both = { ...bundle, PrivateKey: { Name: 'k', SecretReference: 'file:/k' } };
  t.same(problemLines(tls([{ ...profile('p', 'mail.example.org'), ServerCertificate: both }])), [
    'McpEndpoint:Https:Endpoints:0:ServerCertificate: must be either Bundle or CertificateChain beside PrivateKey, not both',
  ]);
  const half = { CertificateChain: { Name: 'c', SecretReference: 'file:/c' } };
  t.same(problemLines(tls([{ ...profile('p', 'mail.example.org'), ServerCertificate: half }])), [
    'McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey: is required beside the other half of the pair',
  ]);
  t.same(problemLines(tls([{ ...profile('p', 'mail.example.org'), ServerCertificate: {} }])), [
    'McpEndpoint:Https:Endpoints:0:ServerCertificate: must carry Bundle, or CertificateChain beside PrivateKey',
  ]);
  const inline = { Bundle: { Name: 'b', SecretReference: 'file:/b.p12', Password: 'p12-password-inline' } };
  const lines = problemLines(tls([{ ...profile('p', 'mail.example.org'), ServerCertificate: inline }]));
  t.same(lines, ['McpEndpoint:Https:Endpoints:0:ServerCertificate:Bundle:Password: must be an object of settings'], 'a bundle password is never inline');
  t.end();
});

t.test('Http3 fails startup: Node has no QUIC', (t) => {
  t.same(problemLines(tls([{ ...profile('p', 'mail.example.org'), HttpProtocols: ['Http1', 'Http3'] }])), [
    'McpEndpoint:Https:Endpoints:0:HttpProtocols: Http3 cannot be served: Node has no stable QUIC; use Http1 and Http2',
  ]);
  t.end();
});

t.test('profiles on one address and port serve identical protocols; a wildcard does not sit beside a specific address', (t) => {
  const a = profile('a', 'a.example.org');
  const b = { ...profile('b', 'b.example.org'), HttpProtocols: ['Http1'] };
  t.same(problemLines(tls([a, b])), [
    'McpEndpoint:Https:Endpoints:1:HttpProtocols: must be identical to McpEndpoint:Https:Endpoints:0:HttpProtocols (same address and port)',
  ]);
  const specific = { ...profile('b', 'b.example.org'), BindAddress: '192.0.2.10' };
  t.same(problemLines(tls([a, specific])), [
    'McpEndpoint:Https:Endpoints:1:BindAddress: a wildcard address and a specific address cannot share port 8443 (see McpEndpoint:Https:Endpoints:0:BindAddress)',
  ]);
  const twoSpecific = [
    { ...profile('a', 'a.example.org'), BindAddress: '192.0.2.10' },
    { ...profile('b', 'b.example.org'), BindAddress: '192.0.2.11' },
  ];
  t.same(problemLines(tls(twoSpecific)), []);
  t.end();
});

t.test('transport and profiles agree', (t) => {
  t.same(problemLines({ McpEndpoint: { Https: { Endpoints: [profile('p', 'mail.example.org')] } } }), [
    'McpEndpoint:Https:Endpoints: profiles are written but McpEndpoint:Transport is Http, which terminates no TLS; choose a TLS transport',
  ]);
  t.same(problemLines({ McpEndpoint: { Transport: 'HttpsOnly' } }), [
    'McpEndpoint:Transport: HttpsOnly needs at least one profile in McpEndpoint:Https:Endpoints',
  ]);
  t.same(problemLines({ McpEndpoint: { Https: { Redirect: { Port: 80 } } } }), [
    'McpEndpoint:Https:Redirect: is written but no profile exists in Https:Endpoints',
  ]);
  t.same(problemLines({ AdminEndpoint: { Https: { Redirect: {} } } }), ['AdminEndpoint:Https:Redirect: is written but no profile exists in Https:Endpoints']);
  t.same(problemLines({ McpEndpoint: { Transport: 'HttpsOnly', Https: { Endpoints: [profile('p', 'mail.example.org')], Redirect: {} } } }), [
    'McpEndpoint:Https:Redirect: is written but Transport HttpsOnly opens no clear-text listener; use HttpAndHttps',
  ]);
  t.same(problemLines({ HealthEndpoints: { Transport: 'HttpsOnly' } }), [
    'HealthEndpoints:Transport: HttpsOnly needs at least one profile in HealthEndpoints:Https:Endpoints',
  ]);
  t.end();
});

t.test('client-certificate profiles need a TLS transport and unique names', (t) => {
  const clientProfile = (name: string) => ({
    Name: name,
    Requirement: 'Required',
    TrustAnchors: [{ Name: 'ca', SecretReference: 'file:/etc/tls/ca.pem' }],
    SubjectAlternativeNames: ['client.example.org'],
  });
  t.same(problemLines({ McpEndpoint: { ClientCertificateProfiles: [clientProfile('batch')] } }), [
    'McpEndpoint:ClientCertificateProfiles: need a TLS connection this process terminates, but Transport is Http; choose HttpsOnly or HttpAndHttps',
  ]);
  t.same(problemLines(tls([profile('p', 'mail.example.org')], { ClientCertificateProfiles: [clientProfile('batch'), clientProfile('batch')] })), [
    'McpEndpoint:ClientCertificateProfiles:1:Name: repeats the name of ClientCertificateProfiles:0',
  ]);
  const noRequirement = { ...clientProfile('x'), Requirement: undefined };
  t.same(problemLines(tls([profile('p', 'mail.example.org')], { ClientCertificateProfiles: [noRequirement] })), [
    'McpEndpoint:ClientCertificateProfiles:0:Requirement: is required (one of Required, Optional)',
  ]);
  t.end();
});
