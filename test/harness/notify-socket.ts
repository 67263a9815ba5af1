/**
 * A stand-in for systemd's notification socket ($NOTIFY_SOCKET): a unix
 * datagram socket that records every message it receives, in order, and
 * closes the file descriptor a `BARRIER=1` message passes, as the service
 * manager does (systemd-notify waits for that close before it exits).
 *
 * Node has no unix datagram socket in core, so the socket is held by a few
 * lines of Debian's python3 (its minimal standard library: socket, array,
 * os, sys), which prints one line per datagram: the number of descriptors
 * passed, a space, the message with newlines escaped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { trackPid, untrackPid } from './processes.ts';

const RECEIVER = `
import array, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("listening", flush=True)
while True:
    data, ancillary, _flags, _addr = s.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    for fd in fds:
        os.close(fd)
    print(len(fds), data.decode("utf-8", "replace").replace("\\n", "\\\\n"), flush=True)
`;

export type NotifyMessage = { readonly text: string; readonly fds: number; readonly at: number };

export type NotifySocket = {
  /** The socket's path: the value for NOTIFY_SOCKET. */
  readonly path: string;
  /** Every message so far (`BARRIER=1` included), in the order received. */
  messages(): readonly NotifyMessage[];
  /** Resolves with the first message (from now on or already received) whose text is `text`; rejects after `ms`. */
  next(text: string, ms?: number): Promise<NotifyMessage>;
  /** Subscribe to each message as it arrives. */
  onMessage(listener: (message: NotifyMessage) => void): void;
  close(): Promise<void>;
};

export function python3(): string {
  return existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
}

/** Starts the receiver on `<dir>/notify.sock` and resolves once it is bound. */
export async function startNotifySocket(dir: string): Promise<NotifySocket> {
  const path = join(dir, 'notify.sock');
  const child: ChildProcess = spawn(python3(), ['-c', RECEIVER, path], { stdio: ['ignore', 'pipe', 'pipe'] });
  trackPid(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const received: NotifyMessage[] = [];
  const listeners: Array<(m: NotifyMessage) => void> = [];
  const bound = new Promise<void>((resolve, reject) => {
    void exited.then(() => reject(new Error(`the notify socket stand-in exited: ${stderr.trim()}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'listening') return resolve();
      const space = line.indexOf(' ');
      const message = { fds: Number(line.slice(0, space)), text: line.slice(space + 1).replaceAll('\\n', '\n'), at: Date.now() };
      received.push(message);
      for (const listener of listeners) listener(message);
    });
  });
  await bound;
  return {
    path,
    messages: () => received,
    onMessage: (listener) => void listeners.push(listener),
    next(text, ms = 30_000) {
      const seen = received.find((m) => m.text === text);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${text} on the notify socket within ${ms} ms`)), ms);
        listeners.push((m) => {
          if (m.text !== text) return;
          clearTimeout(timer);
          resolve(m);
        });
      });
    },
    async close() {
      child.kill('SIGTERM');
      await exited;
      untrackPid(child.pid!);
    },
  };
}
