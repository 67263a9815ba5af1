/**
 * Self time by function for each .cpuprofile in a directory (one per thread
 * under `--cpu-prof`): the thread's total sampled time, then its top
 * functions with their file (relative to the project or node_modules).
 *
 *   node dist/bench/cpuprofile-summary.js <dir> [top=25]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

const [dir, topArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: cpuprofile-summary <dir> [top]');
const top = Number(topArg ?? '25');

function where(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.lastIndexOf('/dist/');
  if (dist >= 0) return url.slice(dist + '/dist/'.length);
  return url.replace(/^file:\/\//, '');
}

for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort()) {
  const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  let idle = 0;
  p.samples.forEach((id, i) => {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += dt;
      return;
    }
    total += dt;
    const key = `${name} ${where(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  // Group by file too: a stage's cost is spread over many small functions.
  const byFile = new Map<string, number>();
  for (const [key, ms] of self) {
    const f = key.split(' ').slice(1).join(' ').replace(/:\d+$/, '') || '(native)';
    byFile.set(f, (byFile.get(f) ?? 0) + ms);
  }
  process.stdout.write(`\n### ${file}: busy ${total.toFixed(0)} ms, idle ${idle.toFixed(0)} ms\n`);
  process.stdout.write('by function (self ms):\n');
  for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${ms.toFixed(0).padStart(7)}  ${k}\n`);
  process.stdout.write('by file (self ms):\n');
  for (const [k, ms] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 12)) process.stdout.write(`  ${ms.toFixed(0).padStart(7)}  ${k}\n`);
}
