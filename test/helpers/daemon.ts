/** Start a real mailcairnd process (from sources) on a temporary directory, and read what it logs. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Daemon = {
  child: ChildProcess;
  port: number;
  dir: string;
  stdout(): string;
  stderr(): string;
  lines(): Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

export function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * `script` is a path relative to the repository (default: bin/mailcairnd.ts), run under tsx;
 * `compiled` is instead the absolute path of an emitted `.js` entry (`compiledDaemon()`), run
 * without it. `args` follow it.
 */
export function spawnDaemon(
  args: string[],
  options: { script?: string; compiled?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Omit<Daemon, 'port' | 'dir'> {
  const entry = options.compiled ? [options.compiled] : ['--import', 'tsx', join(root, options.script ?? 'bin/mailcairnd.ts')];
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: options.cwd ?? root,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    lines: () =>
      out
        .split('\n')
        .slice(0, -1) // the last piece is an unfinished line (or empty)
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

export function writeConfig(dir: string, config: unknown): string {
  const file = join(dir, 'mailcairn.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * The port a spawned daemon's listener bound (configure it with `Port: 0`),
 * read from its `listener.open` line; rejects if the daemon exits first.
 */
export async function listenerPort(daemon: Pick<Daemon, 'lines' | 'exited'>, section: string, timeoutMs = 30_000): Promise<number> {
  let exited = false;
  void daemon.exited.then(() => (exited = true));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = daemon.lines().find((l) => l.event === 'listener.open' && l.section === section);
    if (open) return open.port as number;
    if (exited) throw new Error(`the daemon exited before ${section} opened`);
    if (Date.now() > deadline) throw new Error(`${section} did not open within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let compiled: Promise<string> | undefined;

/**
 * The sources emitted as JavaScript once per test process (tsc with tsconfig.build.json and
 * `--noCheck`: the typecheck is the suite's own step), into a temporary directory beside a link to
 * the repository's node_modules; resolves with the path of `bin/mailcairnd.js` there. For a test
 * that starts the daemon dozens of times: under tsx every start pays the loader in the main
 * thread and in each actor thread, about three times the start of the emitted code.
 */
export function compiledDaemon(): Promise<string> {
  compiled ??= (async () => {
    const out = mkdtempSync(join(tmpdir(), 'mailcairn-compiled-'));
    process.once('exit', () => rmSync(out, { recursive: true, force: true }));
    symlinkSync(join(root, 'node_modules'), join(out, 'node_modules'), 'dir');
    // The emitted modules are ESM, and runtime/version.ts reads the version beside them.
    writeFileSync(join(out, 'package.json'), readFileSync(join(root, 'package.json')));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    await new Promise<void>((resolve, reject) =>
      execFile(
        process.execPath,
        [tsc, '-p', join(root, 'tsconfig.build.json'), '--noCheck', '--sourceMap', 'false', '--outDir', out],
        { cwd: root, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => (err ? reject(new Error(`tsc failed: ${stdout}${stderr}`)) : resolve()),
      ),
    );
    return join(out, 'bin', 'mailcairnd.js');
  })();
  return compiled;
}
