/**
 * `HealthEndpoints`: `/livez` and `/readyz` on a listener of their own, with
 * no credential. `Transport` is `Http` or `HttpsOnly` (TLS from the section's
 * own profiles); probes do not follow redirects, so there is no redirect
 * listener here (our choice; the spec names only the key).
 */
import { z } from 'zod';
import { bindAddress, choice, flag, list, port } from './fields.ts';
import { Connections } from './connections.ts';
import { HttpsProfile } from './https.ts';

export const HealthEndpoints = z
  .strictObject({
    Enabled: flag('Whether the health listener (/livez, /readyz) opens').default(true),
    BindAddress: bindAddress('Address of the health listener (Transport Http)').default('127.0.0.1'),
    Port: port('Port of the health listener (Transport Http)').default(8081),
    Connections: Connections.prefault({}),
    Transport: choice(['Http', 'HttpsOnly'], 'Http: clear text at BindAddress:Port; HttpsOnly: the Https profiles').default('Http'),
    Https: z
      .strictObject({
        Endpoints: list(HttpsProfile, 'TLS profiles of the health listener (Transport HttpsOnly)').default([]),
      })
      .meta({ description: 'TLS termination of the health listener' })
      .prefault({}),
  })
  .meta({ description: 'Liveness and readiness listener' });
