/**
 * What the client tests share: a Mailcairn service started for real
 * in-process (optionally mirroring a private Dovecot, optionally reporting
 * another version), its administrative credentials, and the client itself
 * run as a subprocess with its own HOME and XDG_CONFIG_HOME, so every test
 * owns its credential file.
 *
 * Which client runs is MAILCAIRN_CLI_UNDER_TEST (docs/testing.md):
 * `sources` (the default, `node --import tsx bin/mailcairn.ts`), `bundle`
 * (`node <MAILCAIRN_CLI_BUNDLE>`, default dist/cli/mailcairn.cjs from
 * `npm run build:client`) or `binary` (`<MAILCAIRN_CLI_BINARY>`, default
 * release/mailcairn-linux-x64 from `npm run release`); test/cli/binary.test.ts
 * runs some of these files against the bundle and the binary.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request as undiciRequest } from 'undici';
import { tempDir } from '../helpers/daemon.ts';
import { reservePort } from '../helpers/ports.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

type Teardown = { teardown(fn: () => unknown): void };

export { ALL_PERMISSIONS, type CliService, type CliServiceOptions, startCliService } from '../helpers/cli-service.ts';

export type ClientUnderTest = 'sources' | 'bundle' | 'binary';

/** The command that runs the client under test: executable and the arguments before the client's own. */
export function clientCommand(env: NodeJS.ProcessEnv = process.env): { kind: ClientUnderTest; command: string; args: string[] } {
  const kind = env.MAILCAIRN_CLI_UNDER_TEST ?? 'sources';
  if (kind === 'sources') return { kind, command: process.execPath, args: ['--import', 'tsx', join(root, 'bin/mailcairn.ts')] };
  if (kind === 'bundle' || kind === 'binary') {
    const file =
      kind === 'bundle'
        ? (env.MAILCAIRN_CLI_BUNDLE ?? join(root, 'dist/cli/mailcairn.cjs'))
        : (env.MAILCAIRN_CLI_BINARY ?? join(root, 'release/mailcairn-linux-x64'));
    if (!existsSync(file))
      throw new Error(`MAILCAIRN_CLI_UNDER_TEST=${kind}: ${file} does not exist (npm run ${kind === 'bundle' ? 'build:client' : 'release'})`);
    return kind === 'bundle' ? { kind, command: process.execPath, args: [file] } : { kind, command: file, args: [] };
  }
  throw new Error(`MAILCAIRN_CLI_UNDER_TEST is ${kind}; it takes sources, bundle or binary`);
}

export type CliResult = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

export type CliHome = { home: string; config: string; dir: string };

/** A HOME and XDG_CONFIG_HOME of the test's own; `dir` is where the client keeps its files. */
export function cliHome(t: Teardown): CliHome {
  const home = tempDir(t);
  const config = join(home, 'config');
  mkdirSync(config, { recursive: true });
  return { home, config, dir: join(config, 'mailcairn') };
}

export type CliRun = {
  input?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Called with the child once it runs (to interrupt it). */
  started?: (child: ReturnType<typeof spawn>, output: { stdout(): string; stderr(): string }) => void;
};

/** Runs the client once; stdin is a pipe carrying `input` (or nothing), so it is never a terminal. */
export function cli(home: CliHome, args: string[], run: CliRun = {}): Promise<CliResult> {
  const client = clientCommand();
  const child = spawn(client.command, [...client.args, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: home.home, XDG_CONFIG_HOME: home.config, ...run.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.on('error', () => {});
  child.stdin.end(run.input ?? '');
  run.started?.(child, { stdout: () => stdout, stderr: () => stderr });
  const limit = run.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mailcairn ${args.join(' ')} ran past ${limit} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, limit);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // 'exit' can come before the pipes drain: wait for them.
      let open = 2;
      const done = (): void => {
        open -= 1;
        if (open === 0) resolve({ code, signal, stdout, stderr });
      };
      if (child.stdout.readableEnded) done();
      else child.stdout.once('end', done);
      if (child.stderr.readableEnded) done();
      else child.stderr.once('end', done);
    });
  });
}

/** Logs in with an API key piped to standard input. */
export function loginWithKey(home: CliHome, endpoint: string, key: string, extra: string[] = [], run: CliRun = {}): Promise<CliResult> {
  return cli(home, ['login', '--endpoint', endpoint, ...extra], { ...run, input: `${key}\n` });
}

/** A plain TCP listener counting connections and handing each socket to `serve` (another service, a server that never answers). */
export async function tcpPeer(t: Teardown, serve: (socket: Socket) => void): Promise<{ port: number; connections(): number; server: Server }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
    serve(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as { port: number }).port, connections: () => connections, server };
}

/** Asserts none of `secrets` appears in any of `texts`. */
export function leaks(secrets: readonly string[], ...texts: string[]): string[] {
  return secrets.filter((s) => texts.some((text) => text.includes(s)));
}

export { reservePort, tempDir };

export type Proxy = {
  url: string;
  port: number;
  /** `METHOD /path` of every request forwarded, in order. */
  requests: string[];
  setTarget(target: string): void;
  /** Milliseconds to hold each request whose path starts with `prefix` before forwarding it. */
  delay(prefix: string, ms: number): void;
  server: HttpServer;
};

/**
 * A small HTTP (or, with `tls`, HTTPS) front forwarding to `target`: it
 * counts what a client sent, can be re-pointed at another service, can slow
 * chosen routes down, and (as TLS) stands in for a reverse proxy
 * terminating TLS in front of the administrative listener.
 */
export async function forwardingProxy(
  t: Teardown,
  target: string,
  options: {
    tls?: { cert: string; key: string } /** Send `X-Forwarded-Proto` and `X-Forwarded-Host` as a TLS-terminating proxy does. */;
    forwarded?: boolean;
  } = {},
): Promise<Proxy> {
  let to = target;
  const requests: string[] = [];
  const delays = new Map<string, number>();
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    requests.push(`${req.method} ${path}`);
    const wait = [...delays].find(([prefix]) => path.startsWith(prefix))?.[1] ?? 0;
    setTimeout(() => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'keep-alive', 'transfer-encoding'].includes(name)),
      );
      if (options.forwarded) {
        headers['x-forwarded-proto'] = options.tls ? 'https' : 'http';
        headers['x-forwarded-host'] = req.headers.host ?? '';
      }
      undiciRequest(`${to}${req.url}`, {
        method: req.method as 'GET',
        headers: headers as Record<string, string>,
        ...(req.method === 'POST' || req.method === 'PUT' ? { body: req } : {}),
      }).then(
        async (answer) => {
          const out = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !['connection', 'keep-alive', 'transfer-encoding'].includes(name)));
          res.writeHead(answer.statusCode, out as Record<string, string>);
          res.end(Buffer.from(await answer.body.arrayBuffer()));
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    }, wait);
  };
  const server: HttpServer = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as { port: number }).port;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    setTarget: (next) => (to = next),
    delay: (prefix, ms) => delays.set(prefix, ms),
    server,
  };
}

/**
 * Runs the client on a terminal (util-linux `script` gives it a pty): each
 * step waits for `after` in what the terminal shows, then types `send`.
 * Returns everything the terminal showed, echo included.
 */
export function onTerminal(
  home: CliHome,
  args: string[],
  steps: Array<{ after: RegExp; send: string }>,
  env: Record<string, string> = {},
): Promise<{ code: number | null; screen: string }> {
  const client = clientCommand();
  const quoted = [client.command, ...client.args, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qfec', quoted, '/dev/null'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: home.home, XDG_CONFIG_HOME: home.config, TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  let step = 0;
  const onOutput = (d: Buffer): void => {
    screen += d.toString();
    while (step < steps.length && steps[step]!.after.test(screen)) child.stdin.write(steps[step++]!.send);
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  child.stdin.on('error', () => {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mailcairn ${args.join(' ')} on a terminal ran past 60 s\n${screen}`));
    }, 60_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}
