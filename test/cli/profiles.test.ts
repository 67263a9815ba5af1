/** Endpoint addresses, profile names, the loopback rule and the endpoint choice order, without a deployment. */
import t from 'tap';
import { configDir } from '../../cli/config-dir.ts';
import type { CredentialDocument } from '../../cli/credential-file.ts';
import { chooseProfile, defaultName, isLoopbackHost, parseEndpoint } from '../../cli/profiles.ts';

t.equal(parseEndpoint('https://admin.example.org:8090/'), 'https://admin.example.org:8090');
t.equal(parseEndpoint('https://admin.example.org/mailcairn/api/admin'), 'https://admin.example.org/mailcairn', 'a proxy prefix stays; /api/admin goes');
t.equal(parseEndpoint('HTTP://127.0.0.1:8090'), 'http://127.0.0.1:8090');
for (const bad of ['ftp://x', 'admin.example.org', 'https://user:pw@x.example', 'https://x.example/?a=1', 'https://']) t.equal(parseEndpoint(bad), null, bad);
t.equal(defaultName('https://admin.example.org:8090'), 'admin.example.org');
t.equal(defaultName('http://[::1]:8090'), 'ipv6---1');
for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', 'api.localhost', '[::1]', '::ffff:127.0.0.1']) t.ok(isLoopbackHost(host), host);
for (const host of ['10.0.0.1', 'example.org', '[::2]', '0.0.0.0']) t.notOk(isLoopbackHost(host), host);

const profile = (endpoint: string) => ({ endpoint, mode: 'key' as const, sealedKey: 'v1.a.b.c', signedInAt: '2026-01-01T00:00:00Z' });
const document: CredentialDocument = {
  format: 1,
  current: 'b',
  profiles: { a: profile('https://one.example'), b: profile('https://two.example'), c: profile('https://two.example') },
};

t.equal(chooseProfile(document, undefined, {}).name, 'b', 'the default');
t.equal(chooseProfile(document, undefined, { SERVICE_ENDPOINT: 'a' }).name, 'a', 'SERVICE_ENDPOINT before the default');
t.equal(chooseProfile(document, 'c', { SERVICE_ENDPOINT: 'a' }).name, 'c', '--endpoint before SERVICE_ENDPOINT');
t.equal(chooseProfile(document, 'https://one.example/', {}).name, 'a', 'an address names the profile using it');
t.equal(chooseProfile(document, 'https://two.example', {}).name, 'b', 'among several, the default');
t.throws(() => chooseProfile({ ...document, current: 'a' }, 'https://two.example', {}), /Several profiles use https:\/\/two\.example \(b, c\)/);
t.throws(() => chooseProfile(document, 'https://three.example', {}), /Not signed in to https:\/\/three\.example/);
t.throws(() => chooseProfile(document, 'nosuch', {}), /There is no profile named 'nosuch' \(named by --endpoint\)/);
t.throws(() => chooseProfile(document, 'constructor', {}), /There is no profile named 'constructor'/, 'no inherited member is a profile');
t.throws(() => chooseProfile({ ...document, current: null }, undefined, {}), /No default profile is set/);
t.throws(() => chooseProfile({ format: 1, current: null, profiles: {} }, undefined, {}), /Not signed in: no profile is stored/);

t.equal(configDir({ XDG_CONFIG_HOME: '/home/me/.cfg', HOME: '/home/me' }, 'linux'), '/home/me/.cfg/mailcairn');
t.equal(configDir({ XDG_CONFIG_HOME: 'relative', HOME: '/home/me' }, 'linux'), '/home/me/.config/mailcairn', 'a relative XDG_CONFIG_HOME is ignored');
t.equal(configDir({ HOME: '/home/me' }, 'linux'), '/home/me/.config/mailcairn');
t.equal(configDir({ APPDATA: 'C:\\Users\\me\\AppData\\Roaming' }, 'win32'), 'C:\\Users\\me\\AppData\\Roaming\\mailcairn');
