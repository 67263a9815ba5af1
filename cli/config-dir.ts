/**
 * Where the client keeps its profiles: the per-user configuration directory
 * (docs/cli.md "The credential file"). `%APPDATA%\mailcairn` on Windows;
 * elsewhere `$XDG_CONFIG_HOME/mailcairn`, or `~/.config/mailcairn` when that
 * variable is unset or not absolute (the XDG rule for a relative value).
 */
import { homedir } from 'node:os';
import { isAbsolute, join, win32 } from 'node:path';

export function configDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') {
    const appData = env.APPDATA && win32.isAbsolute(env.APPDATA) ? env.APPDATA : win32.join(homedir(), 'AppData', 'Roaming');
    return win32.join(appData, 'mailcairn');
  }
  const xdg = env.XDG_CONFIG_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(env.HOME && isAbsolute(env.HOME) ? env.HOME : homedir(), '.config'), 'mailcairn');
}
