/**
 * Opening the authorization address in a browser where one exists
 * (docs/cli.md "Interactive"): `BROWSER` when set (`none` opens nothing),
 * else `open` on macOS, `cmd /c start` on Windows, `xdg-open` elsewhere.
 * Never a failure: the address is printed to standard error in any case, so
 * a machine with no browser (a server over SSH) signs in from another one.
 */
import { spawn } from 'node:child_process';

export function openBrowser(address: string, env: NodeJS.ProcessEnv): void {
  const chosen = env.BROWSER?.trim();
  if (chosen === 'none') return;
  const [command, args] =
    chosen !== undefined && chosen !== ''
      ? [chosen, [address]]
      : process.platform === 'darwin'
        ? ['open', [address]]
        : process.platform === 'win32'
          ? ['cmd', ['/c', 'start', '""', address.replaceAll('&', '^&')]]
          : ['xdg-open', [address]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true, env });
    child.on('error', () => {});
    child.unref();
  } catch {
    // no browser: the printed address stands
  }
}
