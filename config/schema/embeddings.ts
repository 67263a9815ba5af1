/**
 * `Embeddings`: the declared embedding profile (provider, model, dimensions,
 * distance) and its spend bound (`MaxInputCharactersPerPeriod`, named by the
 * spec). Semantic search stays `inactive` until a declaration is activated
 * through the admin route; nothing is declared while `Model` is absent.
 */
import { z } from 'zod';
import { choice, httpUrl, text, wholeNumber } from './fields.ts';
import { secretRef } from './secret-ref.ts';
import { timeSpan } from './time-span.ts';

export const Embeddings = z
  .strictObject({
    Provider: choice(['OpenAiCompatible'], 'Protocol of the provider (/v1/embeddings)').default('OpenAiCompatible'),
    BaseAddress: httpUrl('Provider base address; clear text only to a loopback host', { https: 'unless-loopback' }).optional(),
    Model: text('Declared model; with BaseAddress and Dimensions it declares a profile').optional(),
    Dimensions: wholeNumber(1, 8_192, 'Vector length the model produces').optional(),
    Distance: choice(['Cosine', 'L2'], 'Distance the vectors are compared by').default('Cosine'),
    ApiKey: secretRef('Provider API key, by reference').optional(),
    MaxInputCharactersPerPeriod: wholeNumber(1_000, 1_000_000_000_000, 'Characters sent to the provider per period; work waits when spent').default(10_000_000),
    Period: timeSpan('00:01:00', '31.00:00:00', 'Length of the spend period (ours)').prefault('1.00:00:00'),
    RequestTimeout: timeSpan('00:00:01', '00:10:00', 'How long one provider call may take (ours)').prefault('00:01:00'),
    BatchSize: wholeNumber(1, 2_048, 'Passages sent per provider call (ours)').default(64),
  })
  .meta({
    description:
      'Declared embedding profile and its spend bound (the spec names MaxInputCharactersPerPeriod and what a profile declares; the other key names are ours)',
  });
