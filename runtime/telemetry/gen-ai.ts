/**
 * CLIENT spans of calls to a model provider, after OpenTelemetry's gen_ai
 * semantic conventions: named `<operation> <model>` (`chat qwen3:8b`,
 * `embeddings nomic-embed-text`), with `gen_ai.operation.name`,
 * `gen_ai.request.model`, `gen_ai.provider.name` and the configured
 * server's `server.address`/`server.port`; token counts when the provider
 * reports them. Never a prompt, an input, an output, a tool call or the
 * provider's words: they are mail. Failures record the error's code only
 * (tracing.ts `markFailed`).
 *
 * Importable from every layer.
 */
import type { Attributes, Context, Span } from '@opentelemetry/api';
import { inSpan, SpanKind } from './tracing.ts';

export type { Span };

export type GenAiOperation = 'chat' | 'embeddings';

export type GenAiEndpoint = {
  operation: GenAiOperation;
  /** The configured model. */
  model: string;
  /**
   * `openai` for an OpenAI-compatible endpoint (the conventions name the
   * provider by the API spoken, as far as the client knows), `local` for
   * the model run in process.
   */
  provider: string;
  /** The configured base address; only its host and port are kept. */
  baseAddress?: string | null;
};

/**
 * A provider's span, made once per endpoint (the address is parsed here, not
 * per call). `parent`: the trace the call is part of (an actor's `ctx.trace`);
 * absent, the active context.
 */
export type GenAiSpans = { run<T>(work: (span: Span) => Promise<T>, parent?: Context): Promise<T> };

export function genAiSpans(endpoint: GenAiEndpoint): GenAiSpans {
  const name = `${endpoint.operation} ${endpoint.model}`;
  const attributes: Attributes = {
    'gen_ai.operation.name': endpoint.operation,
    'gen_ai.request.model': endpoint.model,
    'gen_ai.provider.name': endpoint.provider,
    ...serverOf(endpoint.baseAddress),
  };
  return {
    run: (work, parent) => inSpan(name, { kind: SpanKind.CLIENT, attributes, ...(parent !== undefined ? { parent } : {}) }, work),
  };
}

/** Token counts as the provider reported them (absent ones are left out). */
export function recordTokenUsage(span: Span, usage: { input?: number | undefined; output?: number | undefined }): void {
  if (usage.input !== undefined) span.setAttribute('gen_ai.usage.input_tokens', usage.input);
  if (usage.output !== undefined) span.setAttribute('gen_ai.usage.output_tokens', usage.output);
}

function serverOf(baseAddress: string | null | undefined): Attributes {
  if (!baseAddress) return {};
  let url: URL;
  try {
    url = new URL(baseAddress);
  } catch {
    return {};
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  // The host only: a base address may hold credentials or a key in its user part or query.
  return { 'server.address': url.hostname, 'server.port': port };
}
