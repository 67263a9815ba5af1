/**
 * `ReverseProxy`: which peers' `X-Forwarded-Proto`/`X-Forwarded-Host` are
 * believed, for the whole process (docs/security.md "Reverse proxy").
 * A network written with host bits is refused in `config/checks/reverse-proxy.ts`.
 */
import { z } from 'zod';
import { list, wholeNumber } from './fields.ts';

export const ReverseProxy = z
  .strictObject({
    TrustedProxies: list(
      z.string({ error: 'must be text' }).meta({ description: 'An IP address or CIDR network', type: 'address or CIDR' }),
      'Peers whose forwarded headers are read; empty trusts everyone (startup warns)',
    ).default([]),
    MaximumForwardedHops: wholeNumber(1, 16, 'Forwarded entries read, right to left').default(1),
  })
  .meta({ description: 'Trust in forwarded headers' });
