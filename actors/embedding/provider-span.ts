/**
 * Each `embed` call of a provider in an `embeddings <model>` CLIENT span
 * (runtime/telemetry/gen-ai.ts): the model, the provider, the configured
 * server, how many texts went, and the failure's code. Never the texts or
 * the vectors.
 */
import { genAiSpans } from '../../runtime/telemetry/gen-ai.ts';
import type { EmbeddingProvider } from './provider.ts';

export function withEmbeddingSpans(provider: EmbeddingProvider, endpoint: { model: string; local: boolean; baseAddress: string | null }): EmbeddingProvider {
  const spans = genAiSpans({
    operation: 'embeddings',
    model: endpoint.model,
    provider: endpoint.local ? 'local' : 'openai',
    baseAddress: endpoint.baseAddress,
  });
  return {
    id: provider.id,
    ...(provider.maxInputCharacters !== undefined ? { maxInputCharacters: provider.maxInputCharacters } : {}),
    embed: (texts, signal, parent, use) => {
      // An empty list makes no request (provider.ts): no span either.
      if (texts.length === 0) return provider.embed(texts, signal, undefined, use);
      return spans.run((span) => {
        span.setAttribute('mailcairn.embedding.inputs', texts.length);
        return provider.embed(texts, signal, undefined, use);
      }, parent);
    },
    health: () => provider.health(),
    close: () => provider.close(),
  };
}
