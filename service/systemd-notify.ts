/**
 * Telling systemd that mailcairnd is ready, and that it is stopping, under
 * `Type=notify` (packaging/mailcairn.service). Does nothing unless systemd
 * started the process with `$NOTIFY_SOCKET` set.
 *
 * The protocol is one datagram on a unix socket (sd_notify(3)), and Node has
 * no unix datagram socket in core (`node:dgram` is UDP only, `node:net` is
 * streams only). So each state goes out through systemd's own
 * `systemd-notify STATE`, as a child process; the unit therefore sets
 * `NotifyAccess=all`, since the sender is not the main process. The tool
 * waits until systemd has taken the message (its barrier, systemd 246 and
 * later), so the message is attributed to the unit even though the sender
 * exits at once. Each call is fire and forget: a failure is one warning line
 * (`systemd.notify-failed`, with the state and the error code), never a
 * crash; under `Type=notify` systemd then times the start out, which is the
 * visible outcome of a readiness it never heard of.
 */
import { execFile } from 'node:child_process';
import type { Logger } from '../runtime/log.ts';

/** How often readiness is asked again while startup is done but the service is not yet ready. */
const READY_POLL_MS = 250;

export type ServiceManagerNotifier = {
  /** Whether a service manager asked to be told (`$NOTIFY_SOCKET` set). */
  readonly enabled: boolean;
  /** `READY=1`, once `isReady()` answers true (asked now, then every 250 ms until then or `stopping()`); sent once. */
  readyWhen(isReady: () => boolean): void;
  /** `STOPPING=1`, once: the drain has begun. */
  stopping(): void;
};

export function serviceManagerNotifier(options: { env?: NodeJS.ProcessEnv; log: Logger }): ServiceManagerNotifier {
  const env = options.env ?? process.env;
  const { log } = options;
  const socket = env.NOTIFY_SOCKET;
  if (socket === undefined || socket === '') return { enabled: false, readyWhen: () => {}, stopping: () => {} };

  const send = (state: 'READY=1' | 'STOPPING=1'): void => {
    execFile('systemd-notify', [state], { env, timeout: 10_000 }, (err) => {
      if (err) {
        const code = typeof err.code === 'number' ? `exit ${err.code}` : (err.code ?? (err.killed ? 'timeout' : 'failed'));
        log.warn({ event: 'systemd.notify-failed', state, code }, 'systemd.notify-failed');
      }
    });
  };
  let ready = false;
  let stopping = false;
  let poll: NodeJS.Timeout | null = null;
  return {
    enabled: true,
    readyWhen(isReady) {
      const check = (): void => {
        poll = null;
        if (ready || stopping) return;
        if (!isReady()) {
          poll = setTimeout(check, READY_POLL_MS);
          poll.unref();
          return;
        }
        ready = true;
        send('READY=1');
      };
      check();
    },
    stopping() {
      if (stopping) return;
      stopping = true;
      if (poll) clearTimeout(poll);
      send('STOPPING=1');
    },
  };
}
