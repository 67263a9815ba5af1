/**
 * Relations inside the sections of background work: synchronization backoff
 * bounds in order; an embedding declaration whole (`BaseAddress`, `Model` and
 * `Dimensions` together; `Local` with no base address and the shipped model's
 * name and length, if written); chat endpoint aliases unique.
 */
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';
import { LOCAL_DIMENSIONS, LOCAL_MODEL } from '../schema/embeddings.ts';
import { formatTimeSpan } from '../schema/time-span.ts';

export function backgroundWorkProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  const backoff = config.MailSynchronization.Backoff;
  if (backoff.Maximum < backoff.Initial) {
    problems.push(problem('MailSynchronization:Backoff:Maximum', `must be at least Backoff:Initial (${formatTimeSpan(backoff.Initial)})`));
  }

  const embeddings = config.Embeddings;
  if (embeddings.Provider === 'Local') {
    problems.push(...localProblems(embeddings));
  } else {
    problems.push(...openAiCompatibleProblems(embeddings));
  }

  const aliases = new Map<string, number>();
  config.Answering.Endpoints.forEach((endpoint, index) => {
    const earlier = aliases.get(endpoint.Alias);
    if (earlier !== undefined) problems.push(problem(['Answering', 'Endpoints', index, 'Alias'], `repeats the alias of Answering:Endpoints:${earlier}`));
    else aliases.set(endpoint.Alias, index);
  });
  return problems;
}

function localProblems(embeddings: Config['Embeddings']): Problem[] {
  const problems: Problem[] = [];
  if (embeddings.BaseAddress !== undefined)
    problems.push(problem('Embeddings:BaseAddress', 'is not used by Provider Local (remove it, or use Provider OpenAiCompatible)'));
  if (embeddings.ApiKey !== undefined) problems.push(problem('Embeddings:ApiKey', 'is not used by Provider Local (remove it)'));
  if (embeddings.Model !== undefined && embeddings.Model !== LOCAL_MODEL)
    problems.push(problem('Embeddings:Model', `must be absent or ${LOCAL_MODEL} with Provider Local (the model shipped with Mailcairn)`));
  if (embeddings.Dimensions !== undefined && embeddings.Dimensions !== LOCAL_DIMENSIONS)
    problems.push(problem('Embeddings:Dimensions', `must be absent or ${LOCAL_DIMENSIONS} with Provider Local`));
  return problems;
}

function openAiCompatibleProblems(embeddings: Config['Embeddings']): Problem[] {
  const problems: Problem[] = [];
  const declared = { BaseAddress: embeddings.BaseAddress, Model: embeddings.Model, Dimensions: embeddings.Dimensions };
  const written = Object.entries(declared).filter(([, value]) => value !== undefined);
  if (written.length > 0 && written.length < 3) {
    for (const [key, value] of Object.entries(declared)) {
      if (value === undefined)
        problems.push(problem(['Embeddings', key], 'is required to declare an embedding profile (BaseAddress, Model and Dimensions together)'));
    }
  }
  if (embeddings.LocalThreads !== undefined) problems.push(problem('Embeddings:LocalThreads', 'is used by Provider Local only (remove it)'));
  if (written.length === 0 && embeddings.ApiKey !== undefined) {
    problems.push(problem('Embeddings:ApiKey', 'is written but no profile is declared (BaseAddress, Model and Dimensions)'));
  }
  return problems;
}
