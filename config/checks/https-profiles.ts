/**
 * What can be known about TLS settings without reading a certificate
 * (docs/configuration.md "Listeners", "Rules across settings"):
 * - the transport and the profiles agree (Http terminates no TLS; the TLS
 *   transports need a profile; `Redirect` is written only beside profiles and
 *   only where a clear-text socket stays open);
 * - profile names and domains are unique in an endpoint;
 * - a certificate is either `Bundle` or `CertificateChain` beside `PrivateKey`;
 * - `Http3` is refused (Node has no stable QUIC), protocols are listed once and
 *   are identical for profiles sharing an address and port;
 * - a wildcard bind address beside a specific one on the same port is refused;
 * - client-certificate profiles need a TLS transport and unique names.
 * This release terminates no TLS: `config/not-served.ts` refuses the TLS
 * transports of an enabled endpoint, so no certificate is read.
 */
import { isWildcardAddress } from '../ip-address.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

type Profile = Config['McpEndpoint']['Https']['Endpoints'][number];
type Section = 'McpEndpoint' | 'AdminEndpoint' | 'HealthEndpoints';

function profileProblems(section: Section, profiles: readonly Profile[]): Problem[] {
  const problems: Problem[] = [];
  const names = new Map<string, number>();
  const domains = new Map<string, number>();
  const byPort = new Map<number, { index: number; address: string; protocols: string }[]>();
  profiles.forEach((profile, index) => {
    const at = [section, 'Https', 'Endpoints', index];
    const sameName = names.get(profile.Name);
    if (sameName !== undefined) problems.push(problem([...at, 'Name'], `repeats the name of ${section}:Https:Endpoints:${sameName}`));
    else names.set(profile.Name, index);
    const sameDomain = domains.get(profile.Domain);
    if (sameDomain !== undefined) problems.push(problem([...at, 'Domain'], `repeats the domain of ${section}:Https:Endpoints:${sameDomain}`));
    else domains.set(profile.Domain, index);

    const certificate = profile.ServerCertificate;
    const chain = certificate.CertificateChain !== undefined || certificate.PrivateKey !== undefined;
    if (certificate.Bundle !== undefined && chain) {
      problems.push(problem([...at, 'ServerCertificate'], 'must be either Bundle or CertificateChain beside PrivateKey, not both'));
    } else if (certificate.Bundle === undefined && !chain) {
      problems.push(problem([...at, 'ServerCertificate'], 'must carry Bundle, or CertificateChain beside PrivateKey'));
    } else if (chain && (certificate.CertificateChain === undefined || certificate.PrivateKey === undefined)) {
      const missing = certificate.CertificateChain === undefined ? 'CertificateChain' : 'PrivateKey';
      problems.push(problem([...at, 'ServerCertificate', missing], 'is required beside the other half of the pair'));
    }

    const protocols = profile.HttpProtocols;
    if (protocols.length === 0) problems.push(problem([...at, 'HttpProtocols'], 'must name at least one of Http1, Http2'));
    if (new Set(protocols).size !== protocols.length) problems.push(problem([...at, 'HttpProtocols'], 'names a protocol twice'));
    if (protocols.includes('Http3')) {
      problems.push(problem([...at, 'HttpProtocols'], 'Http3 cannot be served: Node has no stable QUIC; use Http1 and Http2'));
    }

    const key = [...new Set(protocols)].sort().join(',');
    const onPort = byPort.get(profile.Port) ?? [];
    for (const other of onPort) {
      if (other.address === profile.BindAddress) {
        if (other.protocols !== key) {
          problems.push(
            problem([...at, 'HttpProtocols'], `must be identical to ${section}:Https:Endpoints:${other.index}:HttpProtocols (same address and port)`),
          );
        }
      } else if (isWildcardAddress(other.address) || isWildcardAddress(profile.BindAddress)) {
        problems.push(
          problem(
            [...at, 'BindAddress'],
            `a wildcard address and a specific address cannot share port ${profile.Port} (see ${section}:Https:Endpoints:${other.index}:BindAddress)`,
          ),
        );
      }
    }
    onPort.push({ index, address: profile.BindAddress, protocols: key });
    byPort.set(profile.Port, onPort);
  });
  return problems;
}

function transportProblems(section: Section, transport: string, profileCount: number, redirectWritten: boolean): Problem[] {
  const problems: Problem[] = [];
  if (transport === 'Http' && profileCount > 0) {
    problems.push(
      problem([section, 'Https', 'Endpoints'], `profiles are written but ${section}:Transport is Http, which terminates no TLS; choose a TLS transport`),
    );
  }
  if (transport !== 'Http' && profileCount === 0) {
    problems.push(problem([section, 'Transport'], `${transport} needs at least one profile in ${section}:Https:Endpoints`));
  }
  if (redirectWritten && profileCount === 0) {
    problems.push(problem([section, 'Https', 'Redirect'], 'is written but no profile exists in Https:Endpoints'));
  } else if (redirectWritten && transport === 'HttpsOnly') {
    problems.push(problem([section, 'Https', 'Redirect'], 'is written but Transport HttpsOnly opens no clear-text listener; use HttpAndHttps'));
  }
  return problems;
}

export function httpsProblems(config: Config): Problem[] {
  const mcp = config.McpEndpoint;
  const admin = config.AdminEndpoint;
  const health = config.HealthEndpoints;
  const problems = [
    ...transportProblems('McpEndpoint', mcp.Transport, mcp.Https.Endpoints.length, mcp.Https.Redirect !== undefined),
    ...profileProblems('McpEndpoint', mcp.Https.Endpoints),
    // The administrative endpoint has no Transport: its profiles decide.
    ...transportProblems(
      'AdminEndpoint',
      admin.Https.Endpoints.length > 0 ? 'HttpAndHttps' : 'Http',
      admin.Https.Endpoints.length,
      admin.Https.Redirect !== undefined,
    ),
    ...profileProblems('AdminEndpoint', admin.Https.Endpoints),
    ...transportProblems('HealthEndpoints', health.Transport, health.Https.Endpoints.length, false),
    ...profileProblems('HealthEndpoints', health.Https.Endpoints),
  ];
  if (mcp.ClientCertificateProfiles.length > 0 && mcp.Transport === 'Http') {
    problems.push(
      problem(
        ['McpEndpoint', 'ClientCertificateProfiles'],
        'need a TLS connection this process terminates, but Transport is Http; choose HttpsOnly or HttpAndHttps',
      ),
    );
  }
  const names = new Map<string, number>();
  mcp.ClientCertificateProfiles.forEach((profile, index) => {
    const earlier = names.get(profile.Name);
    if (earlier !== undefined) {
      problems.push(problem(['McpEndpoint', 'ClientCertificateProfiles', index, 'Name'], `repeats the name of ClientCertificateProfiles:${earlier}`));
    } else names.set(profile.Name, index);
  });
  return problems;
}
