/**
 * Rules over credential entries: method blocks, key names, OAuth Resource
 * form and agreement, authorization servers, and the Permissions list.
 */
import t from 'tap';
import { validateConfig } from '../../../config/load.ts';
import { problemLines } from '../fixtures.ts';

const key = (name: string) => ({ Name: name, SecretReference: `env:${name.toUpperCase().replace(/-/g, '_')}`, Lifetime: 'NoLimit' });
const server = (name: string, issuer: string, extra: Record<string, unknown> = {}) => ({
  Name: name,
  Issuer: issuer,
  AuthorizedSubjects: ['subject-1'],
  ...extra,
});
const oauth = (resource: string, servers = [server('idp', 'https://login.example.org/')]) => ({ Resource: resource, AuthorizationServers: servers });
const mcp = (entries: unknown[]) => ({ McpEndpoint: { Authentication: entries } });
const admin = (entries: unknown[]) => ({ AdminEndpoint: { Authentication: entries } });

t.test('an entry carrying no method block is refused by position', (t) => {
  t.same(problemLines(mcp([{ ApiKey: key('a') }, { Permissions: ['service.mail.read'] }])), [
    'McpEndpoint:Authentication:1: carries no method: write an ApiKey, PublicKey or OAuth block',
  ]);
  t.end();
});

t.test('an entry may combine blocks', (t) => {
  t.same(problemLines(mcp([{ ApiKey: key('a'), PublicKey: key('b'), OAuth: oauth('https://mail.example.org/mcp') }])), []);
  t.end();
});

t.test("a key name never takes the prefix of the service's own requesters", (t) => {
  t.same(problemLines(mcp([{ ApiKey: { ...key('own'), Name: 'mailcairn:spam' } }, { ApiKey: key('spam') }])), [
    "McpEndpoint:Authentication:0:ApiKey:Name: begins with mailcairn:, which names the service's own work in the mailbox-change audit (the outbox, rules, spam)",
  ]);
  t.end();
});

t.test('key names are unique in an endpoint', (t) => {
  t.same(problemLines(mcp([{ ApiKey: key('agent') }, { PublicKey: key('agent') }])), [
    'McpEndpoint:Authentication:1:PublicKey:Name: repeats the name of McpEndpoint:Authentication:0:ApiKey; key names are unique in the endpoint',
  ]);
  t.same(problemLines({ ...mcp([{ ApiKey: key('agent') }]), ...admin([{ ApiKey: key('agent') }]) }), [], 'the two surfaces are separate');
  t.end();
});

t.test('Lifetime is NoLimit or an instant with a zone; an expired key does not fail startup', (t) => {
  t.same(problemLines(mcp([{ ApiKey: { ...key('a'), Lifetime: '2001-01-01T00:00:00Z' } }])), []);
  t.match(problemLines(mcp([{ ApiKey: { ...key('a'), Lifetime: '2030-01-01' } }])).join('\n'), /Lifetime: must be NoLimit or an ISO 8601 instant/);
  const result = validateConfig(mcp([{ ApiKey: key('a') }, { ApiKey: { ...key('b'), Lifetime: '2030-01-01T00:00:00+02:00' } }]));
  t.ok(result.ok);
  if (result.ok) {
    t.equal(result.config.McpEndpoint.Authentication[0]?.ApiKey?.Lifetime, Number.POSITIVE_INFINITY);
    t.equal(result.config.McpEndpoint.Authentication[1]?.ApiKey?.Lifetime, Date.UTC(2029, 11, 31, 22));
  }
  t.end();
});

t.test('Resource: https, no user information, query or fragment; held in canonical form', (t) => {
  t.match(problemLines(mcp([{ OAuth: oauth('http://mail.example.org/mcp') }])).join('\n'), /OAuth:Resource: must be an https URL/);
  t.match(problemLines(mcp([{ OAuth: oauth('https://mail.example.org/mcp?x=1') }])).join('\n'), /must not carry a query or fragment/);
  t.match(problemLines(mcp([{ OAuth: oauth('https://mail.example.org/mcp#frag') }])).join('\n'), /must not carry a query or fragment/);
  t.match(problemLines(mcp([{ OAuth: oauth('https://user@mail.example.org/mcp') }])).join('\n'), /must not carry user information/);
  const result = validateConfig(mcp([{ OAuth: oauth('HTTPS://Mail.Example.ORG:443/') }]));
  t.ok(result.ok);
  if (result.ok) t.equal(result.config.McpEndpoint.Authentication[0]?.OAuth?.Resource, 'https://mail.example.org');
  t.end();
});

t.test('every entry agrees on Resource, compared in canonical form', (t) => {
  t.same(problemLines(mcp([{ OAuth: oauth('https://mail.example.org/mcp') }, { OAuth: oauth('HTTPS://MAIL.example.org:443/mcp') }])), []);
  t.same(problemLines(mcp([{ OAuth: oauth('https://mail.example.org/mcp') }, { OAuth: oauth('https://mail.example.org/mcp/') }])), [
    'McpEndpoint:Authentication:1:OAuth:Resource: must agree with McpEndpoint:Authentication:0:OAuth:Resource (https://mail.example.org/mcp)',
  ]);
  t.end();
});

t.test('the administrative Resource ends with /api/admin', (t) => {
  t.same(problemLines(admin([{ OAuth: oauth('https://mail.example.org/api/admin') }])), []);
  t.same(problemLines(admin([{ OAuth: oauth('https://mail.example.org/mcp') }])), [
    'AdminEndpoint:Authentication:0:OAuth:Resource: must end with /api/admin (the public URL of the administrative routes)',
  ]);
  t.end();
});

t.test('authorization servers: names and issuers unique, subjects required, metadata on the issuer host', (t) => {
  const twice = oauth('https://mail.example.org/mcp', [server('idp', 'https://a.example.org/'), server('idp', 'https://a.example.org/')]);
  const lines = problemLines(mcp([{ OAuth: twice }]));
  t.ok(lines.includes('McpEndpoint:Authentication:0:OAuth:AuthorizationServers:1:Name: repeats the name of AuthorizationServers:0; names are unique'));
  t.ok(lines.includes('McpEndpoint:Authentication:0:OAuth:AuthorizationServers:1:Issuer: repeats the issuer of AuthorizationServers:0; issuers are unique'));
  const noSubjects = oauth('https://mail.example.org/mcp', [{ ...server('idp', 'https://a.example.org/'), AuthorizedSubjects: [] }]);
  t.same(problemLines(mcp([{ OAuth: noSubjects }])), [
    'McpEndpoint:Authentication:0:OAuth:AuthorizationServers:0:AuthorizedSubjects: must name at least one subject',
  ]);
  const offHost = oauth('https://mail.example.org/mcp', [
    server('idp', 'https://a.example.org/tenant', { MetadataAddress: 'https://b.example.org/.well-known/openid-configuration' }),
  ]);
  t.same(problemLines(mcp([{ OAuth: offHost }])), [
    "McpEndpoint:Authentication:0:OAuth:AuthorizationServers:0:MetadataAddress: must be on the issuer's own host and port",
  ]);
  const otherPort = oauth('https://mail.example.org/mcp', [server('idp', 'https://a.example.org/', { MetadataAddress: 'https://a.example.org:8443/meta' })]);
  t.equal(problemLines(mcp([{ OAuth: otherPort }])).length, 1);
  const samePort = oauth('https://mail.example.org/mcp', [server('idp', 'https://a.example.org/', { MetadataAddress: 'https://a.example.org:443/meta' })]);
  t.same(problemLines(mcp([{ OAuth: samePort }])), []);
  t.end();
});

t.test('Permissions: names and whole-segment patterns of this surface', (t) => {
  t.same(problemLines(mcp([{ ApiKey: key('a'), Permissions: ['service.mail.read', 'service.mail.contacts.*'] }])), []);
  t.same(problemLines(admin([{ ApiKey: key('a'), Permissions: ['service.admin.*'] }])), []);
  t.same(problemLines(admin([{ ApiKey: key('a'), Permissions: ['*'] }])), []);
  t.same(problemLines(admin([{ ApiKey: key('a'), Permissions: [] }])), [], 'an empty list grants nothing and is allowed');
  const lines = problemLines(
    admin([
      {
        ApiKey: key('a'),
        Permissions: [
          'service.admin.read',
          'service.admin.read',
          'service.admin.reed',
          'service.mail.read',
          'service.mail.*',
          'service.admin.re*',
          'service.admin.*.write.*',
        ],
      },
    ]),
  );
  t.same(lines, [
    'AdminEndpoint:Authentication:0:Permissions:1: repeats service.admin.read (already at index 0)',
    'AdminEndpoint:Authentication:0:Permissions:2: is not a permission of this surface (one of service.admin.read, service.admin.audit.read, service.admin.operate, service.admin.credentials.write, service.admin.spend, service.admin.erase)',
    'AdminEndpoint:Authentication:0:Permissions:3: is a permission of the McpEndpoint surface; credentials and grants do not cross surfaces',
    'AdminEndpoint:Authentication:0:Permissions:4: matches only permissions of the McpEndpoint surface; credentials and grants do not cross surfaces',
    'AdminEndpoint:Authentication:0:Permissions:5: must be a permission name or a pattern where * stands for whole segments (e.g. service.admin.*)',
    'AdminEndpoint:Authentication:0:Permissions:6: matches no permission of this surface',
  ]);
  t.end();
});
