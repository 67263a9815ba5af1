/**
 * `npm run bench`: runs the named scenarios (all by default, or those given
 * as arguments), prints a table per scenario and writes every figure to
 * bench/results/<timestamp>.json with the commit and the machine it ran on
 * (machine.ts). Compare figures only from one machine; each scenario pairs
 * its figures with a peer measured in the same run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { provenance } from './machine.ts';
import { clockTicks, processAccounting } from './peers/process-stats.ts';
import { accounts100 } from './scenarios/accounts-100.ts';
import { actorAsk } from './scenarios/actor-ask.ts';
import { ask } from './scenarios/ask.ts';
import { actorDensity } from './scenarios/actor-density.ts';
import { authOverhead } from './scenarios/auth-overhead.ts';
import { cli } from './scenarios/cli.ts';
import { embedBackfill } from './scenarios/embed-backfill.ts';
import { embedDaemon } from './scenarios/embed-daemon.ts';
import { contacts } from './scenarios/contacts.ts';
import { mailboxChanges } from './scenarios/mailbox-changes.ts';
import { mimeParse } from './scenarios/mime-parse.ts';
import { outbox } from './scenarios/outbox.ts';
import { retrieval } from './scenarios/retrieval.ts';
import { rulesSpam } from './scenarios/rules-spam.ts';
import { search } from './scenarios/search.ts';
import { searchHybrid } from './scenarios/search-hybrid.ts';
import { soak } from './scenarios/soak.ts';
import { syncInitial } from './scenarios/sync-initial.ts';
import { telemetry } from './scenarios/telemetry.ts';
import { tls } from './scenarios/tls.ts';
import type { Row, Scenario } from './scenario.ts';

const scenarios: Scenario[] = [
  actorAsk,
  actorDensity,
  mimeParse,
  syncInitial,
  search,
  searchHybrid,
  authOverhead,
  tls,
  telemetry,
  mailboxChanges,
  outbox,
  accounts100,
  retrieval,
  embedBackfill,
  embedDaemon,
  ask,
  contacts,
  rulesSpam,
  cli,
  soak,
];

function table(rows: Row[]): string {
  if (rows.length === 0) return '(no rows)';
  // Every row's columns, in first-seen order: a scenario of several parts has rows of several shapes.
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]): string => `| ${values.map((v, i) => v.padStart(widths[i]!)).join(' | ')} |`;
  return [line(columns), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !scenarios.some((s) => s.name === w));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}\n`);
  process.exit(2);
}

const machine = provenance(clockTicks(), processAccounting().tool);
process.stdout.write(
  `commit ${machine.commit}${machine.dirty ? ' (uncommitted changes)' : ''}; ${machine.cpu} x${machine.cores}, ${machine.memoryGiB} GiB; Node ${machine.node}; load ${machine.loadAverageAtStart.join(' ')}\n`,
);
const results: Record<string, Row[]> = {};
for (const scenario of scenarios.filter((s) => (wanted.length === 0 ? !s.onlyWhenNamed : wanted.includes(s.name)))) {
  process.stdout.write(`\n## ${scenario.name}: ${scenario.description}\n\n`);
  const rows = await scenario.run();
  results[scenario.name] = rows;
  // Goal rows (goals.ts) get a table of their own after the figures, not columns of the figures' table.
  const goals = rows.filter((r) => 'goal' in r);
  const figures = rows.filter((r) => !('goal' in r));
  process.stdout.write(`${table(figures)}\n`);
  if (goals.length > 0) process.stdout.write(`\n${table(goals)}\n`);
}
const dir = new URL('../../bench/results/', import.meta.url.includes('/dist/') ? import.meta.url : new URL('../x/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = new URL(`${new Date().toISOString().replace(/[:.]/g, '-')}.json`, dir);
const loadAverageAtEnd = loadavg().map((l) => Math.round(l * 100) / 100);
writeFileSync(
  file,
  `${JSON.stringify({ ranAt: new Date().toISOString(), commit: machine.commit, dirty: machine.dirty, machine: { ...machine, loadAverageAtEnd }, results }, null, 2)}\n`,
);
process.stdout.write(`\nwrote ${file.pathname}\n`);
