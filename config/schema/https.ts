/**
 * `Https` of an endpoint: TLS profiles (`Endpoints`), one per domain, and the
 * clear-text `Redirect` listener (docs/configuration.md "Listeners", the
 * `Https` rows). Only the shape and the per-value rules live here; what needs
 * several values (duplicate domains, Bundle beside CertificateChain, Http3,
 * listeners sharing a port) is in `config/checks/https-profiles.ts` and
 * `config/checks/ports.ts`. This release terminates no TLS, so no certificate
 * is read (`config/not-served.ts` refuses the TLS transports).
 */
import { z } from 'zod';
import { bindAddress, choice, dnsName, flag, list, port, text } from './fields.ts';
import { secretRef } from './secret-ref.ts';

export const NamedSecret = z
  .strictObject({
    Name: text('Name reported in diagnostics'),
    SecretReference: secretRef('Where the material is read from'),
  })
  .meta({ description: 'A named secret reference' });

const Bundle = z
  .strictObject({
    Name: text('Name reported in diagnostics'),
    SecretReference: secretRef('Where the PKCS#12 bundle is read from'),
    Password: NamedSecret.optional().meta({ description: 'Password of the bundle, by reference' }),
  })
  .meta({ description: 'A PKCS#12 bundle holding the chain and its private key' });

const ServerCertificate = z
  .strictObject({
    Bundle: Bundle.optional(),
    CertificateChain: NamedSecret.optional().meta({ description: 'PEM certificate chain (leaf first or in any order)' }),
    PrivateKey: NamedSecret.optional().meta({ description: 'PEM private key of the leaf' }),
  })
  .meta({ description: 'Either Bundle, or CertificateChain beside PrivateKey' });

export const HttpProtocol = choice(['Http1', 'Http2', 'Http3'], 'An HTTP version served');

export const HttpsProfile = z
  .strictObject({
    Name: text('Reported in every diagnostic'),
    Domain: dnsName('The one DNS name TLS is terminated for'),
    BindAddress: bindAddress('Address the TLS listener binds (:: binds IPv6)').default('0.0.0.0'),
    Port: port('TCP port of the TLS listener').default(8443),
    MinimumTlsVersion: choice(['Tls12', 'Tls13'], 'Lowest TLS version accepted').default('Tls12'),
    HttpProtocols: list(HttpProtocol, 'HTTP versions served; identical for profiles sharing an address and port; Http3 is refused (Node has no QUIC)').default([
      'Http1',
      'Http2',
    ]),
    ServerCertificate,
  })
  .meta({ description: 'One domain TLS is terminated for' });

export function redirect(defaultPort: number) {
  return z
    .strictObject({
      Enabled: flag('Whether the clear-text redirect listener opens').default(true),
      BindAddress: bindAddress('Address the redirect listener binds').default('0.0.0.0'),
      Port: port('Port of the redirect listener').default(defaultPort),
    })
    .meta({ description: 'Clear-text listener answering every path with 308 to the profile address; only with profiles' });
}

export function https(defaultRedirectPort: number) {
  return z
    .strictObject({
      Endpoints: list(HttpsProfile, 'TLS profiles, one per domain').default([]),
      Redirect: redirect(defaultRedirectPort).optional(),
    })
    .meta({ description: 'TLS termination' });
}
