/**
 * The actor's status (`embedding.status`, `GET /api/admin/embeddings`): the
 * declared profile, the serving and building generations with their
 * coverage, when the next pass runs and why work waits, the declared
 * provider's health, and the period's spend.
 */
import { periodStart, spentIn, storeCoverage } from '../../runtime/store/mailbox/embedding-work.ts';
import type { Generation } from '../../runtime/store/mailbox/vectors.ts';
import { workProgress } from '../../runtime/work-progress.ts';
import { declaredProvider } from './endpoints.ts';
import { live, profileOf } from './generations.ts';
import type { EmbeddingStatus } from './protocol.ts';
import type { EmbeddingState } from './state.ts';

const iso = (ms: number): string => new Date(ms).toISOString();

export function status(state: EmbeddingState): EmbeddingStatus {
  const declared = state.config.declared;
  const { serving, building } = live(state.db);
  const now = Date.now();
  const covered = (g: Generation) => {
    const c = storeCoverage(state.db, g.id);
    const perSecond = state.recent.get(g.id)?.perSecond(now) ?? null;
    return { embeddedEmailCount: c.embedded, emailCount: c.embeddable, progress: workProgress(c.embedded, c.embeddable, perSecond) };
  };
  const health = declaredProvider(state)?.health();
  const start = periodStart(now, state.config.spend.periodMs);
  return {
    declared: declared?.profile ?? null,
    serving: serving === undefined ? null : { ...profileOf(serving), generation: serving.id, servingSince: iso(serving.servingAt!), ...covered(serving) },
    reindex:
      building === undefined
        ? { state: 'none' }
        : { state: 'building', generation: building.id, profile: profileOf(building), startedAt: iso(building.createdAt), ...covered(building) },
    nextPassAt: state.nextPassAt === null ? null : iso(state.nextPassAt),
    waitingFor: state.waitingFor,
    provider:
      declared === null
        ? { state: 'not-declared', since: null, lastFailure: null }
        : { state: health?.state ?? 'healthy', since: health?.since == null ? null : iso(health.since), lastFailure: health?.lastFailure ?? null },
    spend: {
      usedCharacters: spentIn(state.db, start),
      maxCharacters: state.config.spend.maxCharactersPerPeriod,
      periodStartedAt: iso(start),
      periodEndsAt: iso(start + state.config.spend.periodMs),
    },
  };
}
