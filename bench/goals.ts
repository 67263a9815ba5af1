/**
 * Goal rows: issue 14's targets printed beside what was measured, with the
 * peer of the same run, as `goal / measured / peer / met?`. Every scenario
 * that checks a goal adds these rows after its figures; `met?` is `yes`,
 * `no`, or `n/a` when a side has no figure (a peer missing on this machine).
 */
import type { Row } from './scenario.ts';

export type Goal = {
  /** What is promised, in words and with its bound: "initial mirror wall ≤ 1.0× mbsync". */
  goal: string;
  /** What was measured, with its unit ("41.2 s", "1.8×", "287 MiB"). */
  measured: string;
  /** The peer's figure beside it, with its unit, or null when the goal has no peer (a memory bound). */
  peer: string | null;
  /** null: a side has no figure, so the goal could not be checked. */
  met: boolean | null;
};

export function goalRow(g: Goal): Row {
  return { goal: g.goal, measured: g.measured, peer: g.peer ?? '', 'met?': g.met === null ? 'n/a' : g.met ? 'yes' : 'no' };
}

/** A ratio goal: ours ÷ peer ≤ bound. Either side NaN: not checked. */
export function ratioGoal(goal: string, ours: number, peer: number, bound: number, unit: (n: number) => string): Row {
  const checkable = Number.isFinite(ours) && Number.isFinite(peer) && peer > 0;
  const ratio = checkable ? ours / peer : NaN;
  return goalRow({
    goal,
    measured: checkable ? `${unit(ours)} (${ratio.toFixed(2)}×)` : Number.isFinite(ours) ? unit(ours) : 'n/a',
    peer: Number.isFinite(peer) ? unit(peer) : 'n/a',
    met: checkable ? ratio <= bound : null,
  });
}

/** An absolute goal: ours ≤ bound (a memory or latency ceiling), the peer shown when there is one. */
export function boundGoal(goal: string, ours: number, bound: number, unit: (n: number) => string, peer?: number): Row {
  return goalRow({
    goal,
    measured: Number.isFinite(ours) ? unit(ours) : 'n/a',
    peer: peer === undefined ? null : Number.isFinite(peer) ? unit(peer) : 'n/a',
    met: Number.isFinite(ours) ? ours <= bound : null,
  });
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
export const millis = (ms: number): string => `${ms < 10 ? ms.toFixed(2) : ms.toFixed(1)} ms`;
export const mebibytes = (mib: number): string => `${Math.round(mib)} MiB`;
