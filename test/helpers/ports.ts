/**
 * Ports for tests, without races.
 *
 * What Mailcairn's own listeners need is port 0: the process binds, and the
 * test reads the port it got (`Service.mcp.port` in-process, `listenerPort()`
 * for a spawned daemon). A number chosen in advance is only needed for a peer
 * that cannot report its port (Dovecot, Cyrus) or for an address where nothing
 * must listen; `reservePort()` gives those.
 *
 * Why the old bind-0-then-close was not enough: the number went back to the
 * kernel's ephemeral pool, where the next bind to port 0 (ours, another test
 * file's, a peer's) or an outgoing connection's source port could receive it
 * before the intended listener bound it.
 *
 * A reservation therefore comes from below the kernel's ephemeral range, where
 * the kernel never hands a port out by itself, and is claimed across processes
 * with an exclusive lock file holding the claimer's PID (a crashed holder's
 * claim is passed over, see `claim`). A process never hands the same number out
 * twice, and keeps its claims until it exits.
 */
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Shared by every process of the machine that reserves ports this way. */
export const PORT_CLAIMS = join(tmpdir(), 'mailcairn-test-ports');
/** Never below this: ports under 10000 are where system services and developers' own servers tend to live. */
const FLOOR = 10_000;

/**
 * Ports the Fetch standard calls bad (fetch() and undici refuse to connect
 * to them: "bad port"), of those at or above FLOOR. A test that reached an
 * MCP endpoint on 10080 with the SDK client failed on it.
 */
const FETCH_BAD_PORTS = new Set([10_080]);

const handedOut = new Set<number>();
const held: string[] = [];
let range: { low: number; high: number } | undefined;

/** The reservable range: from FLOOR to just below the kernel's ephemeral range. */
export function reservableRange(): { low: number; high: number } {
  if (range) return range;
  let ephemeralLow = 32_768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // Not Linux: the IANA dynamic range starts at 49152, so 32768 is conservative.
  }
  range = { low: FLOOR, high: Math.max(FLOOR + 1_000, ephemeralLow) - 1 };
  return range;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claim `port` for this process (exported for its own test; callers want `reservePort`); false if a live process holds it.
 *
 * A claim is the file `<port>.<generation>` holding the claimer's PID, made
 * atomically (written aside, then hard-linked into place, which fails if the
 * name exists). A dead holder's claim is never removed by anyone else (that
 * would race with a third process claiming the same port); the next claimer
 * takes the next generation instead, and only the creator of a claim removes it.
 */
export function claimPort(port: number): boolean {
  mkdirSync(PORT_CLAIMS, { recursive: true });
  armCleanup();
  for (let generation = 1; ; generation++) {
    const file = join(PORT_CLAIMS, `${port}.${generation}`);
    const aside = join(PORT_CLAIMS, `.${process.pid}.${port}.${generation}`);
    writeFileSync(aside, String(process.pid));
    try {
      linkSync(aside, file);
      held.push(file);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      unlinkSync(aside);
    }
    let holder: number;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      return false; // its holder just released it: leave the port to the next pass
    }
    if (alive(holder)) return false;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

let cleanupArmed = false;
function armCleanup(): void {
  if (cleanupArmed) return;
  cleanupArmed = true;
  process.once('exit', () => {
    for (const file of held) {
      try {
        unlinkSync(file);
      } catch {
        // already gone
      }
    }
  });
}

/**
 * A loopback port that this process alone holds until it exits: nothing else
 * in this run is handed it, and the kernel never gives it to a bind to port 0.
 * Nothing listens on it until the caller binds it.
 */
export async function reservePort(): Promise<number> {
  const { low, high } = reservableRange();
  const span = high - low + 1;
  // Start somewhere of this process's own so that parallel test files rarely contend for one lock.
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = low + ((start + i) % span);
    if (handedOut.has(port) || FETCH_BAD_PORTS.has(port)) continue;
    if (!claimPort(port)) continue;
    handedOut.add(port);
    // Something outside this scheme (a developer's own server) may sit on it: keep the claim, skip the port.
    if (await bindable(port)) return port;
  }
  throw new Error(`no port left to reserve between ${low} and ${high}`);
}
