/**
 * One message judged: the trusted-header stage, then the engine; and what a
 * spam verdict asks of the mailbox, through the account's sync actor
 * (`imap-sync.record-changes`, requester `spam`, request id
 * `spam:<messageId>`, so asking again after a crash answers the same jobs).
 *
 * The engine down, timing out or refused by its circuit gives
 * `unclassified`: never a verdict. Mapped score = clamp(score / required
 * score, 0, 1); spam when it reaches `threshold`.
 *
 * Importable from `actors/spam/` only.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import type { FailureClass } from '../../runtime/circuit.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { Classification, Conclusion, Verdict, VerdictSource } from '../../runtime/store/spam/classifications.ts';
import { boundPath } from '../../runtime/store/spam/judged-mail.ts';
import { type ChangeAsk, RecordChangesReply, syncActorId } from '../imap-sync/protocol.ts';
import { SPAM_REQUESTER, type SpamConfig } from './protocol.ts';
import type { RspamdClient } from './rspamd-client.ts';
import { type HeaderFamily, mapScore, trustedVerdict } from './trusted-headers.ts';

const ASK_DEADLINE_MS = 30_000;

export type Judgement = { kind: 'verdict'; verdict: Verdict; score: number; source: VerdictSource } | { kind: 'unclassified'; failure: FailureClass };

export type Judge = {
  config: SpamConfig;
  engine: RspamdClient;
  trustedHosts: ReadonlySet<string>;
  signal: AbortSignal;
};

function verdictOf(config: SpamConfig, score: number, source: VerdictSource): Judgement {
  // Rounded for the record: four places say more than any engine measures.
  const rounded = Math.round(score * 10_000) / 10_000;
  return { kind: 'verdict', verdict: rounded >= config.threshold ? 'spam' : 'ham', score: rounded, source };
}

export async function judge(j: Judge, raw: Uint8Array): Promise<Judgement> {
  const trusted = trustedVerdict(raw, j.trustedHosts, j.config.trusted.headers as HeaderFamily[]);
  if (trusted !== null) return verdictOf(j.config, trusted.score, 'trusted-header');
  const outcome = await j.engine.check(raw, j.signal);
  if (!outcome.ok) return { kind: 'unclassified', failure: outcome.failure };
  const mapped = mapScore(outcome.score, outcome.requiredScore);
  if (Number.isNaN(mapped)) return { kind: 'unclassified', failure: 'malformed' };
  return verdictOf(j.config, mapped, 'engine');
}

/**
 * Judges a segment's messages with up to `inFlight` engine calls at once (rspamd's normal worker runs a
 * process per core, so one call at a time leaves it idle between two), answering each in order: the
 * caller awaits them one by one and may stop at any (an unclassified message); the rest then finish
 * unread. Null where a message has no raw MIME.
 */
export function judgeAhead(j: Judge, raws: ReadonlyArray<Uint8Array | null>, inFlight: number): Array<Promise<Judgement | null>> {
  let active = 0;
  const waiting: Array<() => void> = [];
  const take = async (): Promise<void> => {
    if (active >= inFlight) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
  };
  const release = (): void => {
    active -= 1;
    waiting.shift()?.();
  };
  const ahead = raws.map(async (raw) => {
    if (raw === null) return null;
    await take();
    try {
      return await judge(j, raw);
    } finally {
      release();
    }
  });
  // One left unread after the caller stopped must not surface as an unhandled rejection; one read rejects there.
  for (const p of ahead) p.catch(() => undefined);
  return ahead;
}

/** The changes a spam verdict asks under the configured action; a conclusion instead when there is nothing to ask. */
function changesOf(db: Database, config: SpamConfig, account: string): ChangeAsk[] | Conclusion | null {
  switch (config.action) {
    case 'None':
      return null;
    case 'Keyword':
      return [{ kind: 'add-keywords', keywords: [config.keyword.toLowerCase()] }];
    case 'Move': {
      const path = boundPath(db, account, config.folder);
      return path === null ? 'folder-unbound' : [{ kind: 'relocate', targetPath: path }];
    }
  }
}

/** Records the verdict's consequence: asks for its changes when `apply` and spam; returns the classification to record. */
export async function act(
  ctx: ActorContext,
  db: Database,
  config: SpamConfig,
  account: string,
  messageId: number,
  judgement: Extract<Judgement, { kind: 'verdict' }>,
  apply: boolean,
): Promise<Classification> {
  const base = { messageId, verdict: judgement.verdict, score: judgement.score, source: judgement.source };
  if (!apply || judgement.verdict === 'ham') return { ...base, applied: false, changeJobs: [], conclusion: null };
  const changes = changesOf(db, config, account);
  if (changes === null) return { ...base, applied: false, changeJobs: [], conclusion: null };
  if (typeof changes === 'string') return { ...base, applied: true, changeJobs: [], conclusion: changes };
  const reply = await ctx.ask(
    syncActorId(account),
    { type: 'imap-sync.record-changes', messageId, requester: SPAM_REQUESTER, requestId: `spam:${messageId}`, changes },
    { reply: RecordChangesReply, deadlineMs: ASK_DEADLINE_MS },
  );
  if (reply.outcome !== 'recorded') {
    return { ...base, applied: true, changeJobs: [], conclusion: reply.outcome === 'not-found' ? 'message-gone' : 'request-conflict' };
  }
  return { ...base, applied: true, changeJobs: reply.changes.map((c) => Number(c.changeId.slice(1))), conclusion: null };
}
