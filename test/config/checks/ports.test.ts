/**
 * Two listeners of the process on one port fail startup naming both
 * sections; the listeners that legitimately share a socket do not.
 */
import t from 'tap';
import { problemLines, profile } from '../fixtures.ts';

t.test('MCP and admin on one port: both sections are named', (t) => {
  const lines = problemLines({ McpEndpoint: { Enabled: true, Port: 9000 }, AdminEndpoint: { Enabled: true, Port: 9000 } });
  t.same(lines, ['AdminEndpoint:Port: port 9000 is also bound by McpEndpoint (McpEndpoint:Port); two listeners of the process cannot share a port']);
  t.end();
});

t.test('a port is a port: different bind addresses still collide', (t) => {
  const lines = problemLines({ AdminEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 8081 }, HealthEndpoints: { BindAddress: '127.0.0.2' } });
  t.match(lines.join('\n'), /HealthEndpoints:Port: port 8081 is also bound by AdminEndpoint/);
  t.end();
});

t.test('the health listener collides with the MCP listener by default only when moved onto it', (t) => {
  t.same(problemLines({ McpEndpoint: { Enabled: true } }), [], 'defaults 8080 and 8081 do not collide');
  t.match(
    problemLines({ McpEndpoint: { Enabled: true }, HealthEndpoints: { Port: 8080 } }).join('\n'),
    /HealthEndpoints:Port: port 8080 is also bound by McpEndpoint/,
  );
  t.end();
});

t.test('a TLS profile and a redirect listener are named by their own settings', (t) => {
  const lines = problemLines({
    McpEndpoint: { Enabled: true, Transport: 'HttpAndHttps', Https: { Endpoints: [profile('public', 'mail.example.org', 8090)] } },
    AdminEndpoint: { Enabled: true },
  });
  t.same(lines, [
    'AdminEndpoint:Port: port 8090 is also bound by McpEndpoint:Https:Endpoints:0 (McpEndpoint:Https:Endpoints:0:Port); two listeners of the process cannot share a port',
  ]);
  const redirect = problemLines({
    McpEndpoint: { Enabled: true, Transport: 'HttpAndHttps', Https: { Endpoints: [profile('public', 'mail.example.org')], Redirect: { Port: 8081 } } },
  });
  t.match(redirect.join('\n'), /HealthEndpoints:Port: port 8081 is also bound by McpEndpoint:Https:Redirect/);
  t.end();
});

t.test('profiles of one endpoint on one address and port share a listener', (t) => {
  const lines = problemLines({
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpsOnly',
      Https: { Endpoints: [profile('a', 'a.example.org'), profile('b', 'b.example.org')] },
    },
  });
  t.same(lines, []);
  t.end();
});

t.test('the admin redirect listener may share the MCP redirect listener, and nothing else', (t) => {
  const shared = {
    McpEndpoint: { Enabled: true, Transport: 'HttpAndHttps', Https: { Endpoints: [profile('mcp', 'mail.example.org', 443)], Redirect: { Port: 80 } } },
    AdminEndpoint: { Enabled: true, Https: { Endpoints: [profile('admin', 'admin.example.org', 8443)], Redirect: { Port: 80 } } },
  };
  t.same(problemLines(shared), []);
  const onRoutes = {
    McpEndpoint: { Enabled: true, Port: 8091 },
    AdminEndpoint: { Enabled: true, Https: { Endpoints: [profile('admin', 'admin.example.org', 8443)] } },
  };
  t.match(problemLines(onRoutes).join('\n'), /AdminEndpoint:Https:Redirect:Port: port 8091 is also bound by McpEndpoint \(McpEndpoint:Port\)/);
  t.end();
});

t.test('TLS profiles of two endpoints on one port collide', (t) => {
  const lines = problemLines({
    McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mail.example.org')] } },
    AdminEndpoint: { Enabled: true, Https: { Endpoints: [profile('admin', 'admin.example.org')], Redirect: { Enabled: false } } },
  });
  t.same(lines, [
    'AdminEndpoint:Https:Endpoints:0:Port: port 8443 is also bound by McpEndpoint:Https:Endpoints:0 (McpEndpoint:Https:Endpoints:0:Port); two listeners of the process cannot share a port',
  ]);
  t.end();
});

t.test('a disabled endpoint binds nothing, and port 0 never collides', (t) => {
  t.same(problemLines({ McpEndpoint: { Port: 8081 } }), []);
  t.same(problemLines({ McpEndpoint: { Enabled: true, Port: 0 }, AdminEndpoint: { Enabled: true, Port: 0 }, HealthEndpoints: { Port: 0 } }), []);
  t.end();
});
