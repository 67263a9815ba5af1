/**
 * What one kill -9 test did, in one machine-readable line per test:
 * `kill9 tally: <actor> kills=<n> lost=<n> duplicated=<n>`. `.ci/run`
 * collects these lines from the run's TAP output, sums them by actor and
 * prints one summary line beside the run's totals; the run fails when the
 * kills are fewer than its floor or anything was lost or duplicated
 * (docs/testing.md, "Kill -9 tests"). What lost and duplicated mean is the
 * test's own: each names it in its header.
 */

/** The actors whose crash safety the kill tests prove; `.ci/run` reports them in this order. */
export type KilledActor = 'sync' | 'journal' | 'outbox';

export type KillTally = { actor: KilledActor; kills: number; lost: number; duplicated: number };

/** The line `.ci/run` reads (its pattern: `kill9 tally: (\w+) kills=(\d+) lost=(\d+) duplicated=(\d+)`). */
export function killTallyLine(tally: KillTally): string {
  return `kill9 tally: ${tally.actor} kills=${tally.kills} lost=${tally.lost} duplicated=${tally.duplicated}`;
}

type Asserts = {
  comment(message: string): void;
  ok(value: unknown, message: string): void;
  equal(found: unknown, wanted: unknown, message: string): void;
};

/** Prints the tally line, then asserts nothing lost, nothing duplicated and at least `floor` kills. */
export function reportKills(t: Asserts, tally: KillTally, floor: number): void {
  t.comment(killTallyLine(tally));
  t.equal(tally.lost, 0, `${tally.actor}: nothing lost across the kills`);
  t.equal(tally.duplicated, 0, `${tally.actor}: nothing duplicated across the kills`);
  t.ok(tally.kills >= floor, `${tally.actor}: at least ${floor} kills (${tally.kills})`);
}
