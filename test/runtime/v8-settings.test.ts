/**
 * The V8 settings the service gives itself before its first worker
 * (runtime/v8-settings.ts): V8 knows every option it sets (an option V8
 * does not know is ignored with a line on standard output, and the setting
 * would be lost without a failure), and an option Node's command line
 * gives is left as the operator gave it. What the floor does is checked by
 * worker-heap-floor.test.ts (through `startWorker`); what the growing
 * factor does to a mirror's peak and the inlining budget to its CPU is
 * measured in bench/ (docs/performance.md, "Peak memory at 50,000" and
 * "The inlining budget").
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { givenOn, HEAP_GROWING_PERCENT, TURBOFAN_INLINING_BUDGET, v8Options, WORKER_OLD_SPACE_FLOOR_MIB } from '../../runtime/v8-settings.ts';

t.test('the service sets the floor, the growing factor and the inlining budget unless the command line gives them', async (t) => {
  const all = [
    `--initial-old-space-size=${WORKER_OLD_SPACE_FLOOR_MIB}`,
    `--heap-growing-percent=${HEAP_GROWING_PERCENT}`,
    `--max-inlined-bytecode-size-cumulative=${TURBOFAN_INLINING_BUDGET}`,
  ];
  t.same(v8Options([]), all);
  t.same(v8Options(['--import', 'tsx', '--enable-source-maps']), all, 'other options change nothing');
  t.same(v8Options(['--max_inlined_bytecode_size_cumulative=920']), [all[0], all[1]], "the operator's inlining budget is kept");
  t.same(v8Options(['--heap-growing-percent=0']), [all[0], all[2]], "the operator's growing factor is kept (0: V8's own)");
  t.same(v8Options(['--initial-old-space-size=16', '--heap_growing_percent=50', '--max-inlined-bytecode-size-cumulative=920']), [], 'all given');
});

t.test('givenOn reads an option from the command line, with - or _ in its name', async (t) => {
  t.ok(givenOn(['--max_inlined_bytecode_size_cumulative=920'], 'max-inlined-bytecode-size-cumulative'));
  t.ok(givenOn(['--import', 'tsx', '--initial-old-space-size=32'], 'initial-old-space-size'));
  t.notOk(givenOn(['--max-old-space-size=100'], 'initial-old-space-size'), 'another option');
  t.notOk(givenOn(['--initial-old-space-size-x=1'], 'initial-old-space-size'), 'a longer name');
  t.notOk(givenOn([], 'initial-old-space-size'));
});

t.test('V8 knows every option the service sets', async (t) => {
  const options = v8Options([]);
  const script = `const v8 = require('node:v8'); for (const o of ${JSON.stringify(options)}) v8.setFlagsFromString(o); v8.setFlagsFromString('--no-such-option-here');`;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 30_000 });
  const refused = `${stdout}${stderr}`.split('\n').filter((line) => /unrecognized flag/.test(line));
  // The last option is made up: it shows that this is how V8 says so.
  t.same(refused, ['Error: unrecognized flag --no-such-option-here']);
});
