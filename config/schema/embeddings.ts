/**
 * `Embeddings`: the declared embedding profile (provider, model, dimensions,
 * distance) and its spend bound (`MaxInputCharactersPerPeriod`, named by the
 * spec). Semantic search stays `inactive` until a declaration is activated
 * through the admin route (docs/semantic-search.md).
 *
 * Declared: `Provider: Local` (the model shipped with Mailcairn, no service),
 * or an OpenAI-compatible `BaseAddress` with `Model` and `Dimensions`.
 */
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { choice, httpUrl, text, wholeNumber } from './fields.ts';
import { secretRef } from './secret-ref.ts';
import { timeSpan } from './time-span.ts';

/** The model shipped with Mailcairn (`Provider: Local`): Universal Sentence Encoder lite, English, computed in process. */
export const LOCAL_MODEL = 'universal-sentence-encoder-lite-en';
export const LOCAL_DIMENSIONS = 512;

/**
 * Threads that run the local model when `LocalThreads` is not written: one
 * per core, at most two. Each holds its own copy of the model (~200 MiB) and
 * runs below normal priority, so the backfill takes the cores the rest of
 * the service leaves idle.
 */
export function defaultLocalThreads(): number {
  return Math.min(2, availableParallelism());
}

/**
 * Passages of each message the local model embeds, from the message's start,
 * when `PassagesPerMessage` is not written. The model reads the first 128
 * tokens (about 800 characters) of a passage, at ~40 CPU-ms each on one
 * core; a long body makes up to 64 passages, and the realistic mailbox of
 * issue 34 averages 4.6. The rest of a long body is reached by the
 * full-text half of every search (docs/semantic-search.md, "Passages
 * embedded per message"). Another provider embeds every passage unless
 * told otherwise.
 */
export const LOCAL_PASSAGES_PER_MESSAGE = 4;

/** Passages embedded per message when `PassagesPerMessage` is not written; null: every passage the parse made. */
export function defaultPassagesPerMessage(provider: 'Local' | 'OpenAiCompatible'): number | null {
  return provider === 'Local' ? LOCAL_PASSAGES_PER_MESSAGE : null;
}

/** Passages embedded per message for the declared profile: as written, else the provider's default; null: every passage. */
export function passagesPerMessage(e: { Provider: 'Local' | 'OpenAiCompatible'; PassagesPerMessage?: number | undefined }): number | null {
  return e.PassagesPerMessage ?? defaultPassagesPerMessage(e.Provider);
}

export const Embeddings = z
  .strictObject({
    Provider: choice(
      ['OpenAiCompatible', 'Local'],
      'OpenAiCompatible: a /v1/embeddings service (BaseAddress, Model, Dimensions); Local: the model shipped with Mailcairn, computed in process (ours)',
    ).default('OpenAiCompatible'),
    BaseAddress: httpUrl('OpenAiCompatible: provider base address; clear text only to a loopback host', { https: 'unless-loopback' }).optional(),
    Model: text("OpenAiCompatible: the model; with BaseAddress and Dimensions it declares a profile. Local: absent, or the shipped model's name").optional(),
    Dimensions: wholeNumber(1, 8_192, 'Vector length the model produces (Local: absent or 512)').optional(),
    Distance: choice(['Cosine', 'L2'], 'Distance the vectors are compared by').default('Cosine'),
    ApiKey: secretRef('Provider API key, by reference').optional(),
    MaxInputCharactersPerPeriod: wholeNumber(1_000, 1_000_000_000_000, 'Characters sent to the provider per period; work waits when spent').default(10_000_000),
    Period: timeSpan('00:01:00', '31.00:00:00', 'Length of the spend period (ours)').prefault('1.00:00:00'),
    RequestTimeout: timeSpan('00:00:01', '00:10:00', 'How long one provider call may take (ours)').prefault('00:01:00'),
    BatchSize: wholeNumber(1, 2_048, 'Passages sent per provider call (ours)').default(64),
    PassagesPerMessage: wholeNumber(
      1,
      64,
      'Passages of each message embedded, from its start (a body makes at most 64); default 4 with Local, every passage otherwise (ours)',
    ).optional(),
    LocalThreads: wholeNumber(
      1,
      16,
      'Local: threads that run the model, each with its own copy (~200 MiB), below normal priority; default one per core, at most 2 (ours)',
    ).optional(),
  })
  .meta({
    description:
      'Declared embedding profile and its spend bound (the spec names MaxInputCharactersPerPeriod and what a profile declares; the other key names are ours)',
  });
