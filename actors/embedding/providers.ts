/**
 * The provider a declared profile names, built once per actor: the
 * OpenAI-compatible client, or the local model (started only when declared,
 * on threads of its own: local-use-lite.ts). Private to actors/embedding/.
 */
import type { Logger } from '../../runtime/log.ts';
import { OpenAiCompatible } from './openai-compatible.ts';
import { withEmbeddingSpans } from './provider-span.ts';
import type { EmbeddingConfig } from './protocol.ts';
import type { EmbeddingProvider } from './provider.ts';

export type Declared = NonNullable<EmbeddingConfig['declared']>;

/** The provider, each of its calls in an `embeddings <model>` span (provider-span.ts). */
export async function createProvider(declared: Declared, log: Logger): Promise<EmbeddingProvider> {
  const local = declared.profile.provider === 'local';
  return withEmbeddingSpans(await providerOf(declared, log), { model: declared.profile.model, local, baseAddress: local ? null : declared.baseAddress });
}

async function providerOf(declared: Declared, log: Logger): Promise<EmbeddingProvider> {
  if (declared.profile.provider === 'local') {
    // Loaded only when declared; the model itself loads on its own threads, on the first texts.
    const { LocalUseLite } = await import('./local-use-lite.ts');
    return new LocalUseLite({ log, threads: declared.localThreads });
  }
  if (declared.baseAddress === null) throw new Error('an OpenAI-compatible profile without a base address passed the configuration checks');
  return new OpenAiCompatible({
    baseAddress: declared.baseAddress,
    model: declared.profile.model,
    dimensions: declared.profile.dimensions,
    ...(declared.apiKeyRef === null ? {} : { apiKeyRef: declared.apiKeyRef }),
    requestTimeoutMs: declared.requestTimeoutMs,
    log,
  });
}
