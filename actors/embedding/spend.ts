/**
 * What the actor sends is spent in the ledger before it is sent
 * (runtime/store/mailbox/embedding-work.ts `trySpend`), against
 * `Embeddings:MaxInputCharactersPerPeriod` per `Embeddings:Period`: a pass's provider calls and
 * query placement draw on the same period's characters, and a crash never
 * sends unspent characters.
 */
import { characterCount, periodStart, spentIn, trySpend } from '../../runtime/store/mailbox/embedding-work.ts';
import type { EmbeddingState } from './state.ts';

/** Characters reserved for query placement at a time (about a hundred searches). */
const QUERY_ALLOWANCE = 2_000;

/**
 * The passages of the next provider call, from `from` on: as many as fit in
 * `batchSize` and in what the period has left, spent before the call is
 * sent. Null when not even one fits: work waits for the rollover.
 */
export function spendOnCall<P extends { text: string }>(state: EmbeddingState, passages: readonly P[], from: number, batchSize: number): P[] | null {
  const { maxCharactersPerPeriod, periodMs } = state.config.spend;
  const start = periodStart(Date.now(), periodMs);
  const room = maxCharactersPerPeriod - spentIn(state.db, start);
  const call: P[] = [];
  let characters = 0;
  while (from + call.length < passages.length && call.length < batchSize) {
    const next = passages[from + call.length]!;
    const size = characterCount(next.text);
    if (characters + size > room) break;
    call.push(next);
    characters += size;
  }
  if (call.length === 0 || !trySpend(state.db, start, characters, maxCharactersPerPeriod)) return null;
  return call;
}

/**
 * Takes a query's characters from an allowance reserved in the ledger
 * QUERY_ALLOWANCE characters at a time: durable like every spend (a crash
 * forgets at most the unused rest of one allowance, counted as spent), but
 * one write per many searches instead of one per search — a write per
 * search also made every query-pool thread drop its cached coverage counts.
 */
export function spendOnQuery(state: EmbeddingState, characters: number): boolean {
  const { maxCharactersPerPeriod, periodMs } = state.config.spend;
  const start = periodStart(Date.now(), periodMs);
  const allowance = state.queryAllowance;
  if (allowance.periodStart === start && allowance.remaining >= characters) {
    allowance.remaining -= characters;
    return true;
  }
  // A new allowance; at the end of the period only what is left, or just this query.
  const left = maxCharactersPerPeriod - spentIn(state.db, start);
  const reserve = Math.max(characters, Math.min(QUERY_ALLOWANCE, left));
  if (!trySpend(state.db, start, reserve, maxCharactersPerPeriod)) return false;
  state.queryAllowance = { periodStart: start, remaining: reserve - characters };
  return true;
}
