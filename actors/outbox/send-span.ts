/**
 * The `smtp.send` span of one delivery attempt (a CLIENT span: the SMTP
 * session that offers one send). It names the configured server and the
 * account, and records how the attempt ended (`mailcairn.outcome`: answered,
 * not-begun, no-final-reply) with the failure's internal code as
 * `error.type`. Never a recipient, sender, subject or the server's text.
 */
import type { Context } from '@opentelemetry/api';
import { inSpan, markFailed, SpanKind } from '../../runtime/telemetry/tracing.ts';
import type { AttemptResult } from './delivery.ts';

/** `parent`: the trace the attempt is part of (the handler's `ctx.trace`); absent: the active context. */
export function inSmtpSendSpan(
  accountId: string,
  server: { readonly host: string; readonly port: number },
  parent: Context | undefined,
  attempt: (traced: Context) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const attributes = { 'server.address': server.host, 'server.port': server.port, 'mailcairn.account': accountId };
  return inSpan('smtp.send', { kind: SpanKind.CLIENT, attributes, ...(parent !== undefined ? { parent } : {}) }, async (span, traced) => {
    const result = await attempt(traced);
    span.setAttribute('mailcairn.outcome', result.kind);
    const code = result.kind === 'answered' ? result.failure?.code : result.code;
    if (code !== undefined) markFailed(span, { code });
    return result;
  });
}
