/**
 * The answers the client reads, checked loosely (docs/admin-api.md
 * for the shapes): the members a command prints
 * must be there with their types; members a later build adds pass through.
 * An answer that does not fit is a deployment this client cannot read, said
 * so rather than printed half.
 */
import { z } from 'zod';
import { CliFailure } from './failure.ts';

const Count = z.number().int().nonnegative();
const Instant = z.string();

/** Progress of long work (docs/admin-api.md "Progress"); absent from a server older than it. */
export const WorkProgress = z.looseObject({
  completedEmailCount: Count,
  totalEmailCount: Count.nullable(),
  emailsPerSecond: z.number().nonnegative().nullable(),
  secondsLeft: Count.nullable(),
});
export type WorkProgress = z.infer<typeof WorkProgress>;

export const SynchronizationAnswer = z.looseObject({
  synchronizationEnabled: z.boolean(),
  accounts: z.array(
    z.looseObject({
      account: z.string(),
      phase: z.string(),
      nextRunDueAt: Instant.nullable(),
      consecutiveFailureCount: Count,
      lastRun: z.looseObject({ outcome: z.string(), endedAt: Instant, foldersFailed: Count }).nullable(),
      folders: z.array(
        z.looseObject({
          alias: z.string(),
          mirrored: z.boolean(),
          uidValidity: Count.nullable(),
          lastSeenUid: Count.nullable(),
          progressAdvancedAt: Instant.nullable(),
          lastRun: z
            .looseObject({
              outcome: z.string(),
              endedAt: Instant,
              storedEmailCount: Count,
              oversizedEmailCount: Count,
              unreadableEmailCount: Count,
              hasMoreEmails: z.boolean(),
            })
            .nullable(),
          /** Absent from a server older than the derivation writer. */
          notYetIndexedEmailCount: Count.optional(),
          /** Null for a folder no longer mirrored. */
          progress: WorkProgress.nullable().optional(),
        }),
      ),
    }),
  ),
});

const Scope = { account: z.string(), folder: z.string().nullable() };

export const RewindAssessmentAnswer = z.looseObject({ ...Scope, storedEmailCount: Count });
export const RewindAnswer = z.looseObject({ ...Scope, folders: z.array(z.string()) });

export const RederivationAnswer = z.looseObject({
  started: z.boolean(),
  carriage: z.string().nullable(),
  run: z
    .looseObject({
      ...Scope,
      requestedAt: Instant,
      isOutstanding: z.boolean(),
      rederivedEmailCount: Count,
      unreadableEmailCount: Count,
      missingContentEmailCount: Count,
      endedAt: Instant.nullable(),
    })
    .nullable(),
});

export const ErasureAnswer = z.looseObject({
  account: z.string(),
  folder: z.string(),
  erasedEmailCount: Count,
  emailsRemain: z.boolean(),
  /** Absent from a server older than the erasure's progress. */
  remainingEmailCount: Count.optional(),
});

export const DeadLettersAnswer = z.looseObject({
  jobs: z.array(
    z.looseObject({
      job: z.string(),
      type: z.string(),
      account: z.string().nullable(),
      attemptCount: Count,
      failureClassification: z.string().nullable(),
      failureReason: z.string().nullable(),
      enqueuedAt: Instant.nullable(),
      deadLetteredAt: Instant.nullable(),
    }),
  ),
  nextCursor: z.string().nullable().optional(),
});

export const RetryAnswer = z.looseObject({ job: z.string(), outcome: z.string() });

export const OutboxSummaryAnswer = z.looseObject({
  stageCounts: z.looseObject({ Recorded: Count, TransmissionBegun: Count, Sent: Count, Refused: Count, Cancelled: Count }),
});

const OutboxEntry = {
  outgoingEmail: z.string(),
  recordedAt: Instant,
  account: z.string(),
  stage: z.string(),
  attemptCount: Count,
  lastFailure: z.looseObject({ code: z.string(), replyCode: z.number().int().nullable() }).nullable(),
  dueAt: Instant.nullable(),
};

export const OutboxListingAnswer = z.looseObject({
  outgoingEmails: z.array(z.looseObject(OutboxEntry)),
  nextCursor: z.string().nullable().optional(),
});

export const OutgoingEmailAnswer = z.looseObject({
  ...OutboxEntry,
  recipients: z.array(
    z.looseObject({ address: z.string(), header: z.string(), state: z.string(), replyCode: z.number().int().nullable(), repliedAt: Instant.nullable() }),
  ),
});

export const OutboxDecisionAnswer = z.looseObject({ outgoingEmail: z.string(), outcome: z.string() });

const Profile = z.looseObject({ provider: z.string(), model: z.string(), dimensions: Count, distance: z.string() });
const Building = { embeddedEmailCount: Count, emailCount: Count, progress: WorkProgress.optional() };

export const EmbeddingStatusAnswer = z.looseObject({
  declared: Profile.nullable(),
  serving: Profile.extend({ generation: Count, servingSince: Instant, ...Building }).nullable(),
  reindex: z.looseObject({
    state: z.string(),
    generation: Count.optional(),
    profile: Profile.optional(),
    startedAt: Instant.optional(),
    embeddedEmailCount: Count.optional(),
    emailCount: Count.optional(),
    progress: WorkProgress.optional(),
  }),
  nextPassAt: Instant.nullable(),
  waitingFor: z.string().nullable(),
  provider: z.looseObject({ state: z.string(), since: Instant.nullable(), lastFailure: z.string().nullable() }),
  spend: z.looseObject({ usedCharacters: Count, maxCharacters: Count, periodStartedAt: Instant, periodEndsAt: Instant }),
});

export const ActivationForecastAnswer = z.looseObject({
  declared: Profile.nullable(),
  effect: z.string(),
  passages: Count,
  characters: Count,
  approximateTokens: Count,
  periods: Count,
  forecast: z.string(),
});

export const ActivationAnswer = z.looseObject({ outcome: z.string(), generation: Count, forecast: ActivationForecastAnswer });

export function read<T extends z.ZodType>(schema: T, value: unknown, endpoint: string, route: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CliFailure(`${endpoint} answered ${route} with a document this client cannot read (another build?).`);
  return parsed.data;
}

export const SpamRunAnswer = z.looseObject({
  started: z.boolean(),
  run: z
    .looseObject({
      account: z.string(),
      apply: z.boolean(),
      requestedAt: Instant,
      isOutstanding: z.boolean(),
      judgedEmailCount: Count,
      spamEmailCount: Count,
      changeCount: Count,
      waitingForEngineSince: Instant.nullable(),
      progress: WorkProgress,
      endedAt: Instant.nullable(),
      outcome: z.string().nullable(),
    })
    .nullable(),
});
export type SpamRunAnswer = z.infer<typeof SpamRunAnswer>;

export const SpamClassificationsAnswer = z.looseObject({
  entries: z.array(
    z.looseObject({
      id: z.number(),
      storedEmailId: z.string(),
      verdict: z.string(),
      score: z.number(),
      source: z.string(),
      runId: z.number().nullable(),
      applied: z.boolean(),
      conclusion: z.string().nullable(),
      changes: z.array(z.looseObject({ changeId: z.string(), change: z.string(), state: z.string(), outcome: z.string().nullable() })),
      classifiedAt: Instant,
    }),
  ),
  nextCursor: z.string().optional(),
});
