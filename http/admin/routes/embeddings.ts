/**
 * Embedding routes (docs/admin-api.md "Embeddings"): the status of
 * semantic search, what activating the declared profile would do and cost,
 * the activation, and the cancellation of a reindex. The answers are the
 * embedding actor's reply schemas (actors/embedding/protocol.ts), each
 * member described here for the generated reference.
 */
import { z } from 'zod';
import { ActivationForecast, ActivationResult, CancellationResult, EmbeddingStatus } from '../../../actors/embedding/protocol.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { activate, activationForecast, cancelReindex, embeddingStatus } from '../use-cases/embeddings.ts';
import { ADMIN_PREFIX } from './prefix.ts';

/** The writes take no input: `{}`, or no body at all. */
export const NoInput = z.strictObject({}).describe('Nothing: send `{}` or no body');

const status = EmbeddingStatus.shape;
export const EmbeddingStatusAnswer = EmbeddingStatus.extend({
  declared: status.declared.describe('The profile `Embeddings` declares (provider, model, dimensions, distance); null: none declared'),
  serving: status.serving.describe(
    'The generation answering searches, with the stored emails it has embedded of all stored and its `progress` (the same counts, the pace of the last passes, the time left); null: none activated (semantic search inactive)',
  ),
  reindex: status.reindex.describe(
    'A generation being built for a changed profile while the serving one answers, with its coverage and `progress`; `state: none` when there is none',
  ),
  nextPassAt: status.nextPassAt.describe(
    'When the next backfill pass runs; null just after start, when `EmbeddingBackfill:Enabled` is false, or when nothing is activated',
  ),
  waitingFor: status.waitingFor.describe(
    "Why embedding work waits: `spend` (the period's characters are used), `provider` (failing, or its circuit is open); null: not waiting",
  ),
  provider: status.provider.describe("The declared provider's health as last seen, since when, and the class of its last failure (never the provider's words)"),
  spend: status.spend.describe('Characters sent this period of `Embeddings:MaxInputCharactersPerPeriod`, and when the period rolls over'),
});

const forecast = ActivationForecast.shape;
export const ActivationForecastAnswer = ActivationForecast.extend({
  declared: forecast.declared.describe('The declared profile; null: none declared'),
  effect: forecast.effect.describe(
    '`start`: a first generation; `reindex`: a new generation beside the serving one; `serving`: the declared profile serves already (activating spends nothing); `building`: it is being built already; `not-declared`: nothing to activate',
  ),
  passages: forecast.passages.describe('Passages activating would send to the provider'),
  characters: forecast.characters.describe('Characters of those passages'),
  approximateTokens: forecast.approximateTokens.describe("Characters / 4, rounded up; the provider's tokenizer decides"),
  periods: forecast.periods.describe('Spend periods the characters need (0 when nothing is sent)'),
  forecast: forecast.forecast.describe('One sentence for the operator to read before agreeing; names no mail'),
});

const result = ActivationResult.shape;
export const ActivationAnswer = ActivationResult.extend({
  outcome: result.outcome.describe('`started` / `reindexing`: a generation was begun now; `serving` / `building`: nothing was begun, nothing spent'),
  generation: result.generation.describe('The generation begun, serving or being built'),
  forecast: ActivationForecastAnswer.describe('The forecast the activation acted on'),
});

const cancellation = CancellationResult.shape;
export const CancellationAnswer = CancellationResult.extend({
  cancelled: cancellation.cancelled.describe('The generation whose building stopped; null: no reindex was under way (nothing stopped)'),
  serving: cancellation.serving.describe('The generation still serving; null: none'),
});

export const embeddingRoutes = [
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/embeddings`,
    permission: 'service.admin.read',
    summary: 'Semantic search health and lag: the declared and serving profiles, reindex, next pass, provider health and spend',
    answer: EmbeddingStatusAnswer,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await embeddingStatus(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/embeddings/activation`,
    permission: 'service.admin.read',
    summary: 'What activating the declared profile would do and cost (passages, characters, approximate tokens); writes nothing',
    answer: ActivationForecastAnswer,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await activationForecast(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/embeddings/activation`,
    permission: 'service.admin.spend',
    summary:
      'Takes up the declared profile and starts embedding, which starts a provider bill; the profile already serving or being built spends nothing. 400 when none is declared',
    body: NoInput,
    bodyOptional: true,
    bodyLimit: WRITE_BODY_BYTES,
    answer: ActivationAnswer,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await activate(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/embeddings/reindex/cancellation`,
    permission: 'service.admin.operate',
    summary: 'Stops the reindex under way; the serving generation stays',
    body: NoInput,
    bodyOptional: true,
    bodyLimit: WRITE_BODY_BYTES,
    answer: CancellationAnswer,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await cancelReindex(deps, principal, deadlineMs) };
    },
  }),
];
