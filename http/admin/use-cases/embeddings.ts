/**
 * Embedding status and activation (docs/admin-api.md
 * "Embeddings"), each answered by the embedding actor,
 * the one writer of generations and holder of the provider:
 * - the status lines, and the activation forecast (writes nothing), under
 *   `service.admin.read`;
 * - the activation, under `service.admin.spend`: it may start a provider
 *   bill. Activating the profile already serving (or being built) begins
 *   nothing and spends nothing; with no profile declared it is the 400
 *   naming what to declare;
 * - the cancellation of a reindex, under `service.admin.operate`: the
 *   serving generation stays.
 *
 * A client that reads the forecast before activating (`mailcairn embedding
 * activate`) needs `read` and `spend`; the POST itself publishes only `spend`.
 */
import { ActivationForecast, ActivationResult, CancellationResult, EMBEDDING_ID, EmbeddingStatus } from '../../../actors/embedding/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { invalidRequest, requirePrincipal } from './guard.ts';

type Deps = Pick<AdminDeps, 'actor'>;

export async function embeddingStatus(deps: Deps, principal: Principal | null, deadlineMs: number): Promise<EmbeddingStatus> {
  requirePrincipal(principal, 'service.admin.read');
  return deps.actor(EMBEDDING_ID).ask({ type: 'embedding.status' }, { reply: EmbeddingStatus, deadlineMs });
}

export async function activationForecast(deps: Deps, principal: Principal | null, deadlineMs: number): Promise<ActivationForecast> {
  requirePrincipal(principal, 'service.admin.read');
  return deps.actor(EMBEDDING_ID).ask({ type: 'embedding.forecast' }, { reply: ActivationForecast, deadlineMs });
}

export async function activate(deps: Deps, principal: Principal | null, deadlineMs: number): Promise<ActivationResult> {
  requirePrincipal(principal, 'service.admin.spend');
  try {
    return await deps.actor(EMBEDDING_ID).ask({ type: 'embedding.activate' }, { reply: ActivationResult, deadlineMs });
  } catch (err) {
    // The code's sentence names the settings to write; nothing of the request is in it.
    if (err instanceof AppError && err.code === 'E_EMBED_NOT_DECLARED') throw invalidRequest(err.message);
    throw err;
  }
}

export async function cancelReindex(deps: Deps, principal: Principal | null, deadlineMs: number): Promise<CancellationResult> {
  requirePrincipal(principal, 'service.admin.operate');
  return deps.actor(EMBEDDING_ID).ask({ type: 'embedding.cancel-reindex' }, { reply: CancellationResult, deadlineMs });
}
