/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * pinned in package.json) run as a peer would run it (issue 28, item 6):
 * its `dns-rebinding-protection` scenario against a Mailcairn service
 * started for real, its MCP listener unauthenticated on 127.0.0.1. The
 * scenario sends `initialize` naming `evil.example.com` in `Host` and
 * `Origin` (a 4xx expected), then naming the URL's own host (a 2xx, and a
 * 2xx for `notifications/initialized`). Run at both loopback names a local
 * client uses; nothing leaves the machine and nothing is downloaded.
 *
 * Then the MCP SDK's own client (what Claude Code and the MCP Inspector are
 * built on) at `http://127.0.0.1:<port>/mcp` and `http://localhost:<port>/mcp`:
 * it connects and lists the tools, so the guard keeps local clients working.
 *
 * The suite's bundle needs Node 22 to load; on Node 20 it is started with
 * node20-fs-glob.mjs (see there).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { startService } from '../../service/app.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';
import { captureLog } from '../helpers/log-capture.ts';

t.setTimeout(120_000);

const SCENARIO = 'dns-rebinding-protection';
const suiteCli = join(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json'), '..', 'dist', 'index.js');
const node20Shim = fileURLToPath(new URL('./node20-fs-glob.mjs', import.meta.url));

type Check = { id: string; status: string; errorMessage?: string; details?: unknown };

/** The suite's CLI on one scenario; its checks as it wrote them under `outputDir`. */
function runScenario(url: string, outputDir: string): Promise<{ code: number; stdout: string; checks: Check[] }> {
  return new Promise((resolve, reject) => {
    const args = ['--import', node20Shim, suiteCli, 'server', '--url', url, '--scenario', SCENARIO, '--output-dir', outputDir, '--timeout', '20000'];
    execFile(process.execPath, args, { cwd: outputDir, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      try {
        resolve({ code, stdout, checks: checksUnder(outputDir) });
      } catch (readErr) {
        reject(new Error(`the suite wrote no checks (exit ${code}): ${stderr || stdout}`, { cause: readErr }));
      }
    });
  });
}

/** Every checks.json the run wrote (one per scenario), concatenated. */
function checksUnder(dir: string): Check[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('checks.json'));
  if (files.length === 0) throw new Error('no checks.json');
  return files.flatMap((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Check[]);
}

t.test('the conformance scenario passes against an unauthenticated loopback listener, and the SDK client keeps working', async (t) => {
  const dir = tempDir(t);
  const logs = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, {
      McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 },
      HealthEndpoints: { Port: 0 },
      Storage: { Database: join(dir, 'mailcairn.db') },
    }),
    env: {},
    log: logs.log,
  });
  t.teardown(() => service.stop());
  const port = service.mcp!.port;

  for (const host of ['127.0.0.1', 'localhost']) {
    const url = `http://${host}:${port}/mcp`;
    const run = await runScenario(url, tempDir(t));
    const byId = Object.fromEntries(run.checks.map((check) => [check.id, check]));
    t.match(
      byId,
      { 'localhost-host-rebinding-rejected': { status: 'SUCCESS' }, 'localhost-host-valid-accepted': { status: 'SUCCESS' } },
      `${url}: both checks of the scenario pass`,
    );
    t.match(byId['localhost-host-rebinding-rejected'], { details: { statusCode: 403, hostHeader: 'evil.example.com' } }, 'refused with the 403');
    t.same(
      run.checks.filter((check) => check.status === 'FAILURE'),
      [],
      'no check fails (the wire-schema ones included)',
    );
    t.equal(run.code, 0, `${url}: the suite exits 0`);
  }

  for (const host of ['127.0.0.1', 'localhost']) {
    const client = new Client({ name: 'dns-rebinding-conformance', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://${host}:${port}/mcp`)));
    const { tools } = await client.listTools();
    t.ok(
      tools.some((tool) => tool.name === 'list_accounts'),
      `the SDK client at ${host} lists the tools`,
    );
    await client.close();
  }
});
