/**
 * `Telemetry`: OpenTelemetry traces and metrics through `@opentelemetry/api`
 * (rate-limit metrics tagged with the policy name, `service.authorization.refusals`).
 */
import { z } from 'zod';
import { flag, text } from './fields.ts';

export const Telemetry = z
  .strictObject({
    Enabled: flag('Whether traces and metrics are exported').default(false),
    ServiceName: text('service.name of exported telemetry', 128).default('mailcairn'),
  })
  .meta({ description: 'OpenTelemetry (ServiceName ours)' });
