import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { startCliService } from './test/cli/harness.ts';
const teardowns: Array<() => unknown> = [];
const svc = await startCliService({ teardown: (fn) => teardowns.push(fn) });
const env = { PATH: process.env.PATH ?? '', HOME: '/tmp/prof', XDG_CONFIG_HOME: '/tmp/prof/config' };
mkdirSync('/tmp/prof/config', { recursive: true });
const login = spawn(process.execPath, ['dist/cli/mailcairn.cjs', 'login', '--endpoint', svc.admin], { env, stdio: ['pipe', 'ignore', 'inherit'] });
login.stdin.end(`${svc.keys.operator}\n`);
await once(login, 'close');
for (let i = 0; i < 3; i++) {
  const c = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof/cpu', '--cpu-prof-interval=100', 'dist/cli/mailcairn.cjs', 'status'], { env, stdio: 'inherit' });
  await once(c, 'close');
}
const c = spawn(process.execPath, ['-e', 'const s=Date.now();process.on("exit",()=>{console.error(process.moduleLoadList.filter(m=>m.startsWith("NativeModule")).length)})', ], { env, stdio: 'inherit' });
await once(c, 'close');
for (const t of teardowns.reverse()) await t();
process.exit(0);
