/**
 * `npm run demo`: Mailcairn on a generated mailbox, for trying an agent on it.
 *
 * Starts a private Dovecot (test/harness/dovecot.ts) on a loopback port,
 * places a seeded, generated mailbox in it (INBOX and Archive, with empty Sent
 * and Drafts), starts an SMTP sink beside it (test/harness/smtp-server.ts, on
 * 127.0.0.1, no TLS and no login) that the account sends through, creates a key
 * ring, a database and a configuration in a temporary directory, runs the
 * service in this process with the MCP endpoint on 127.0.0.1, waits for the
 * first synchronization run to end, and prints the MCP URL with the snippets
 * that connect Claude Code, Cursor, VS Code and the MCP Inspector to it.
 * Then it activates the local embedding model (Embeddings: Provider Local),
 * waits while the mailbox is embedded, and shows one search whose answer
 * shares no word with the question: missed lexically, found by hybrid search.
 * A message an agent sends arrives at the sink: it delivers nothing onwards,
 * prints one line (Message-ID and recipients) and keeps the message as
 * sent-mail/NNNN.eml in the temporary directory; the sent copy is filed in Sent.
 * Ctrl-C stops the service, then the sink, then Dovecot (by its PID), and
 * removes the temporary directory; a second Ctrl-C exits at once.
 *
 * With --chat URL it also declares an OpenAI-compatible chat endpoint
 * (Answering, alias demo-chat, model --chat-model, default llama3.1; the key,
 * if any, by reference to $MAILCAIRN_DEMO_CHAT_API_KEY, never printed) and,
 * once hybrid search serves, asks ask_mail one question the reminder answers
 * and prints the answer with its citations. An endpoint that fails or cannot
 * be reached is reported in one line with how to check it; the demo goes on.
 *
 * Options: --port N (the MCP port; default: a free one chosen at run time),
 * --chat URL and --chat-model NAME (e.g. Ollama: --chat http://127.0.0.1:11434).
 * Without Dovecot installed: as root, or with passwordless sudo, it runs
 * `apt-get install dovecot-imapd` (keeping the package from starting a
 * system-wide server); otherwise it prints the command and exits 1.
 *
 * A development script, run from the sources with tsx (`node --import tsx
 * test/dev/demo.ts`); it uses the test harness and is not part of the service,
 * which is why it lives beside the tests rather than in bin/.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AskMailResult } from '../../actors/answering/protocol.ts';
import { EMBEDDING_ID } from '../../actors/embedding/protocol.ts';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { describePosture } from '../../config/posture.ts';
import { ChatEndpoint } from '../../config/schema/answering.ts';
import { startService, type Service } from '../../service/app.ts';
import { AppError } from '../../runtime/errors.ts';
import { keyringNew } from '../../runtime/keyring/cli.ts';
import { createLogger } from '../../runtime/log.ts';
import type { SynchronizationStatus } from '../../runtime/store/mailbox/status.ts';
// Type-only: the harness modules that run Dovecot are imported once Dovecot is known to be
// installed, since they resolve its binaries when they load.
import type { Dovecot } from '../harness/dovecot.ts';
import { generateMailbox, type GeneratedMessage } from '../harness/generator.ts';
import type { Delivery, SmtpSink } from '../harness/smtp-server.ts';
import { reservePort } from '../helpers/ports.ts';

/** Same seed, same mailbox: every demo shows the same mail. */
const SEED = 20_240_917;
const ARCHIVED = 160;
const IN_INBOX = 240;
const OWNER = { name: 'Alex Morgan', address: 'alex@example.org' };
const ACCOUNT = 'demo';
const DOVECOT_USER = 'demo';
/** The MCP Inspector's web UI, allowed as a browser origin (its "direct" connection mode). */
const INSPECTOR_ORIGINS = ['http://localhost:6274', 'http://127.0.0.1:6274'];
const SYNC_TIMEOUT_MS = 180_000;
/** The local model embeds about ten passages a second per core: the demo mailbox takes a minute or two. */
const EMBED_TIMEOUT_MS = 15 * 60_000;
/**
 * The semantic search shown once the mailbox is embedded: a question in other words than the mail
 * that answers it (the generated mail is word salad; this one message is written to be found).
 */
const SEMANTIC_QUERY = 'overdue payment';
const SEMANTIC_SUBJECT = 'Reminder: your March bill is still outstanding';
const SEMANTIC_BODY = [
  'Hi Alex,',
  '',
  'Our records show that the March bill of EUR 1,240 for the office cleaning has not been settled yet.',
  'Could you arrange the transfer by Friday? Reply to this email if the amount looks wrong.',
  '',
  'Kind regards,',
  'Dana from Brightside Cleaning',
].join('\r\n');
const STOP_DEADLINE_MS = 15_000;
/** The question `--chat` asks ask_mail: the reminder above answers it, in other words than the question's. */
const ASK_QUESTION = 'Is there a bill I still have to pay, and how much is it?';
const CHAT_ALIAS = 'demo-chat';
/** One call to the chat endpoint: a local model on a CPU may take minutes over the first, longest prompt. */
const CHAT_DEADLINE = '00:03:00';
/** The whole question, as long as the service lets one MCP request run (McpEndpoint:RequestTimeout, ten minutes). */
const ASK_TIMEOUT_MS = 10 * 60_000;

const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const note = (line: string): void => void process.stderr.write(`${line}\n`);

/** An end the user is told about in words, with this exit code. */
class DemoExit extends Error {
  readonly exitCode: number;
  constructor(exitCode: number, message: string) {
    super(message);
    this.exitCode = exitCode;
  }
}

// ---------------------------------------------------------------------------
// Arguments

/** The chat endpoint `--chat` declares: ask_mail is asked one question once hybrid search serves. */
type ChatOption = { baseAddress: string; model: string; apiKeyRef: string | null };

const USAGE = 'usage: npm run demo [-- --port N] [--chat URL [--chat-model NAME]]';
const DEFAULT_CHAT_MODEL = 'llama3.1';
/** An API key for the chat endpoint, if it needs one: passed to the service as an `env:` reference, never read or printed here. */
const CHAT_KEY_VARIABLE = 'MAILCAIRN_DEMO_CHAT_API_KEY';

function parseOptions(): { port: number | null; chat: ChatOption | null } {
  let values: { port?: string | undefined; chat?: string | undefined; 'chat-model'?: string | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string', short: 'p' }, chat: { type: 'string' }, 'chat-model': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (err) {
    throw new DemoExit(2, `${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    out(USAGE);
    out('  Runs Mailcairn on a generated mailbox held by a private Dovecot, with the MCP endpoint');
    out('  on 127.0.0.1 (port N, default: a free one), sending through a local SMTP sink that keeps what');
    out('  it receives. Ctrl-C stops it and removes everything it made.');
    out('  --chat URL         an OpenAI-compatible chat endpoint (http only to a loopback host), e.g. Ollama:');
    out('                     --chat http://127.0.0.1:11434; once hybrid search serves, the demo asks ask_mail');
    out('                     one question about the mailbox and prints the answer and its citations');
    out(`  --chat-model NAME  the chat model (default ${DEFAULT_CHAT_MODEL}; it must be able to call tools)`);
    out(`  ${CHAT_KEY_VARIABLE}, if set, is sent as the endpoint's API key (never printed)`);
    process.exit(0);
  }
  let port: number | null = null;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port < 1 || port > 65_535)
      throw new DemoExit(2, `--port: expected a port number from 1 to 65535, got ${JSON.stringify(values.port)}`);
  }
  if (values.chat === undefined) {
    if (values['chat-model'] !== undefined) throw new DemoExit(2, `--chat-model needs --chat URL\n${USAGE}`);
    return { port, chat: null };
  }
  // The service's own rules for Answering:Endpoints (http(s), clear text to loopback only, no user information).
  const address = ChatEndpoint.shape.BaseAddress.safeParse(values.chat);
  if (!address.success) {
    throw new DemoExit(
      2,
      // The value is not echoed: it may carry user information.
      `--chat: ${address.error.issues[0]?.message ?? 'not a base address'}; expected the http(s) base address of an OpenAI-compatible chat endpoint, e.g. http://127.0.0.1:11434 (Ollama)`,
    );
  }
  const model = values['chat-model'] ?? DEFAULT_CHAT_MODEL;
  if (!ChatEndpoint.shape.Model.safeParse(model).success) throw new DemoExit(2, '--chat-model: expected a model name (1 to 256 characters)');
  const key = process.env[CHAT_KEY_VARIABLE];
  return { port, chat: { baseAddress: values.chat, model, apiKeyRef: key !== undefined && key !== '' ? `env:${CHAT_KEY_VARIABLE}` : null } };
}

// ---------------------------------------------------------------------------
// Dovecot present, or installed

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Where the harness will look: $DOVECOT_BIN/$DOVEADM_BIN, /usr/sbin and /usr/bin, then PATH. */
function findBinary(envName: string, fixed: string, name: string): string | null {
  const fromEnv = process.env[envName];
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : null;
  return existsSync(fixed) ? fixed : onPath(name);
}

function dovecotMissing(): string[] {
  const missing: string[] = [];
  if (!findBinary('DOVECOT_BIN', '/usr/sbin/dovecot', 'dovecot')) missing.push('dovecot');
  if (!findBinary('DOVEADM_BIN', '/usr/bin/doveadm', 'doveadm')) missing.push('doveadm');
  return missing;
}

const APT_COMMAND = 'apt-get update && apt-get install -y dovecot-imapd';

// Installing the package must not start a system-wide Dovecot: the demo runs its own. The same
// policy-rc.d guard as .ci/run, removed again afterwards if this script put it there.
const INSTALL_SCRIPT = `set -e
export DEBIAN_FRONTEND=noninteractive
added=
if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\\nexit 101\\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && added=1; fi
cleanup() { if [ -n "$added" ]; then rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT
apt-get update
apt-get install -y --no-install-recommends dovecot-imapd
`;

function ensureDovecot(): void {
  const missing = dovecotMissing();
  if (missing.length === 0) return;
  const root = process.getuid?.() === 0;
  const apt = onPath('apt-get') !== null;
  const sudo = !root && onPath('sudo') !== null && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (!apt) {
    throw new DemoExit(
      1,
      `The demo needs Dovecot 2.3 (${missing.join(' and ')} not found), and this system has no apt-get.\n` +
        'Install Dovecot with your package manager, then run `npm run demo` again.\n' +
        'If the binaries are not in /usr/sbin, /usr/bin or on PATH, set DOVECOT_BIN and DOVEADM_BIN to them.',
    );
  }
  if (!root && !sudo) {
    throw new DemoExit(
      1,
      `The demo needs Dovecot (${missing.join(' and ')} not found). Install it, then run \`npm run demo\` again:\n\n` +
        `  sudo sh -c '${APT_COMMAND}'\n\n` +
        'The demo starts its own private Dovecot on a loopback port; it does not use a system-wide one.',
    );
  }
  note(`Dovecot is not installed: running \`${APT_COMMAND}\` ${root ? 'as root' : 'through sudo'}.`);
  note('(The package is kept from starting a system-wide Dovecot; the demo runs its own.)');
  const result = root
    ? spawnSync('sh', ['-c', INSTALL_SCRIPT], { stdio: 'inherit' })
    : spawnSync('sudo', ['-n', 'sh', '-c', INSTALL_SCRIPT], { stdio: 'inherit' });
  if (result.status !== 0) {
    throw new DemoExit(1, `Installing dovecot-imapd failed (exit ${result.status ?? result.signal}). Install it by hand:\n\n  sudo sh -c '${APT_COMMAND}'`);
  }
  const still = dovecotMissing();
  if (still.length > 0) {
    throw new DemoExit(1, `dovecot-imapd is installed, but ${still.join(' and ')} still cannot be found: check DOVECOT_BIN and DOVEADM_BIN, or PATH.`);
  }
  note('dovecot-imapd installed.');
}

// ---------------------------------------------------------------------------
// The run

type Resources = {
  dir?: string;
  dovecot?: Dovecot;
  smtp?: SmtpSink;
  service?: Service;
  logFd?: number;
  keepAlive?: NodeJS.Timeout;
};

const held: Resources = {};
let stopping: Promise<void> | null = null;

/** Stop what was started, in reverse order; never throws. */
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    if (held.keepAlive) clearInterval(held.keepAlive);
    const step = async (what: string, fn: () => Promise<void> | void): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        note(`demo: stopping ${what} failed: ${(err as Error).message}`);
      }
    };
    if (held.service) await step('the service', () => held.service!.stop());
    if (held.smtp) await step('the SMTP sink', () => held.smtp!.stop());
    if (held.dovecot) await step('Dovecot', () => held.dovecot!.stop());
    if (held.logFd !== undefined) {
      const fd = held.logFd;
      held.logFd = undefined; // a late line is dropped, never written to a reused descriptor
      await step('the log', () => closeSync(fd));
    }
    if (held.dir) await step('the temporary directory', () => rmSync(held.dir!, { recursive: true, force: true }));
  })();
  return stopping;
}

function installSignals(): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      // The harness's exit hook still sends SIGTERM to Dovecot's PID; the directory goes below.
      note('demo: second signal, exiting now');
      process.exit(130);
    }
    signalled = true;
    note(`\nStopping (${signal}): the service, the SMTP sink, then Dovecot; removing ${held.dir ?? 'the temporary directory'}.`);
    const force = setTimeout(() => {
      note('demo: stopping took too long, exiting');
      process.exit(1);
    }, STOP_DEADLINE_MS);
    force.unref();
    void stopAll().then(() => {
      note('Stopped.');
      process.exit(0);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Whatever way this process ends, the temporary directory does not outlive it.
  process.on('exit', () => {
    if (held.dir) rmSync(held.dir, { recursive: true, force: true });
  });
}

/** The last `answering.provider-failed` the service logged: what the demo says when ask_mail answers 54001. */
type ProviderFailure = { code: number | null; failure: string | null; status: number | null };
let lastProviderFailure: ProviderFailure | null = null;

/** Log lines go to a file in the temporary directory; warnings and errors are also shown, briefly. */
function demoLogSink(file: string): (chunk: string) => void {
  held.logFd = openSync(file, 'a', 0o600);
  return (chunk: string) => {
    if (held.logFd !== undefined) writeSync(held.logFd, chunk.endsWith('\n') ? chunk : `${chunk}\n`);
    for (const line of chunk.split('\n')) {
      if (!line.startsWith('{')) continue;
      let entry: { level?: number; msg?: string; event?: string; code?: unknown; details?: { failure?: unknown; status?: unknown } };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      if (entry.event === 'answering.provider-failed') {
        lastProviderFailure = {
          code: typeof entry.code === 'number' ? entry.code : null,
          failure: typeof entry.details?.failure === 'string' ? entry.details.failure : null,
          status: typeof entry.details?.status === 'number' ? entry.details.status : null,
        };
      }
      // The startup warnings are printed with the summary, once.
      if ((entry.level ?? 0) < 40 || entry.event === 'config.warning') continue;
      note(`  [${(entry.level ?? 0) >= 50 ? 'error' : 'warn'}] ${entry.msg ?? ''}${entry.event && entry.event !== entry.msg ? ` (${entry.event})` : ''}`);
    }
  };
}

type DemoMailbox = { inbox: GeneratedMessage[]; archive: GeneratedMessage[]; attachments: number; replies: number };

async function placeMailbox(dovecot: Dovecot): Promise<DemoMailbox> {
  const { writeMaildir } = await import('../harness/place-mail.ts');
  const mailbox: DemoMailbox = { inbox: [], archive: [], attachments: 0, replies: 0 };
  // In date order: the older part is archived, the newer part waits in INBOX; threads span both.
  for (const m of generateMailbox({
    seed: SEED,
    count: ARCHIVED + IN_INBOX,
    owner: OWNER,
    start: new Date('2023-01-01T00:00:00Z'),
    end: new Date('2025-06-30T00:00:00Z'),
  })) {
    (mailbox.archive.length < ARCHIVED ? mailbox.archive : mailbox.inbox).push(m);
    if (m.attachments > 0) mailbox.attachments++;
    if (m.inReplyTo) mailbox.replies++;
  }
  await writeMaildir(dovecot, DOVECOT_USER, 'INBOX', [...mailbox.inbox, { raw: semanticTarget(), internalDate: new Date('2025-06-20T09:00:00Z') }]);
  await writeMaildir(dovecot, DOVECOT_USER, 'Archive', mailbox.archive);
  // Empty, for the outbox to file sent copies and drafts in (created unless Dovecot already made them).
  await writeMaildir(dovecot, DOVECOT_USER, 'Sent', []);
  await writeMaildir(dovecot, DOVECOT_USER, 'Drafts', []);
  return mailbox;
}

/** The message the semantic search of the demo finds (its words are not the query's). */
function semanticTarget(): Buffer {
  return Buffer.from(
    [
      'From: Dana Whitfield <dana@brightside-cleaning.example>',
      `To: ${OWNER.name} <${OWNER.address}>`,
      `Subject: ${SEMANTIC_SUBJECT}`,
      'Date: Fri, 20 Jun 2025 09:00:00 +0000',
      'Message-ID: <bill-reminder-2025-06@brightside-cleaning.example>',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      SEMANTIC_BODY,
      '',
    ].join('\r\n'),
  );
}

/** One header's value (unfolded) from a message's header section; null when absent. */
function headerValue(raw: Buffer, name: string): string | null {
  const text = raw.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const unfolded = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const prefix = `${name.toLowerCase()}:`;
  for (const line of unfolded.split(/\r?\n/)) if (line.toLowerCase().startsWith(prefix)) return line.slice(prefix.length).trim();
  return null;
}

/** For the terminal: no control characters (a peer on loopback could send anything), and not too long. */
const printable = (s: string): string => s.replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, 200);

/** The SMTP sink the demo account sends through: no TLS, no login, loopback only; keeps and prints what it accepts. */
async function startSink(mailDir: string): Promise<SmtpSink> {
  const { startSmtpServer } = await import('../harness/smtp-server.ts');
  mkdirSync(mailDir, { mode: 0o700 });
  let kept = 0;
  const onDelivery = (d: Delivery): void => {
    kept += 1;
    const file = `${String(kept).padStart(4, '0')}.eml`;
    try {
      writeFileSync(join(mailDir, file), d.raw, { mode: 0o600 });
    } catch (err) {
      note(`demo: could not keep ${file}: ${(err as Error).message}`);
    }
    const id = printable(headerValue(d.raw, 'Message-ID') ?? '(no Message-ID)');
    out(`SMTP sink: message ${id} accepted for ${d.recipients.length} recipient(s): ${printable(d.recipients.join(', '))} (${file})`);
  };
  return startSmtpServer({ security: 'None', onDelivery });
}

/** The sender of the newest INBOX message not from the owner, for the sample prompt. */
function latestCorrespondent(mailbox: DemoMailbox): string | null {
  for (const m of [...mailbox.inbox].reverse()) {
    const from = headerValue(m.raw, 'From');
    const address = from ? (/<([^<>\s]+@[^<>\s]+)>/.exec(from)?.[1] ?? /[^\s<>"]+@[^\s<>"]+/.exec(from)?.[0]) : undefined;
    if (address && address.toLowerCase() !== OWNER.address) return address;
  }
  return null;
}

function demoConfig(o: {
  dir: string;
  port: number;
  adminPort: number;
  dovecot: Dovecot;
  smtp: SmtpSink;
  passwordFile: string;
  keyRingFile: string;
  apiKeyFile: string;
  adminKeyFile: string;
  chat: ChatOption | null;
}): unknown {
  return {
    McpEndpoint: {
      Enabled: true,
      Transport: 'Http',
      BindAddress: '127.0.0.1',
      Port: o.port,
      // A freshly generated API key: clients present it as `Authorization: Bearer <key>`.
      Authentication: [{ ApiKey: { Name: 'demo-agent', SecretReference: `file:${o.apiKeyFile}`, Lifetime: 'NoLimit' } }],
      // Browsers only from the Inspector's page: no other web page can reach the endpoint by DNS rebinding.
      Cors: { AllowedOrigins: INSPECTOR_ORIGINS },
    },
    // The operator's side, for the `mailcairn` client: loopback only, one key holding every permission.
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: o.adminPort,
      Authentication: [{ ApiKey: { Name: 'demo-operator', SecretReference: `file:${o.adminKeyFile}`, Lifetime: 'NoLimit' } }],
    },
    // Nothing stands in front of the demo: believe forwarded headers from no one but this machine.
    ReverseProxy: { TrustedProxies: ['127.0.0.1/32', '::1/128'] },
    HealthEndpoints: { Enabled: false },
    Deployment: { PublicBaseAddress: `http://127.0.0.1:${o.port}` },
    Accounts: [
      {
        Id: ACCOUNT,
        Owner: OWNER.name,
        Imap: { Host: '127.0.0.1', Port: o.dovecot.port, Security: 'None', Username: DOVECOT_USER, Password: `file:${o.passwordFile}` },
        // The demo's sink on loopback takes no login, so no Password; From: the login is no address.
        Smtp: { Host: o.smtp.host, Port: o.smtp.port, Security: 'None', Username: DOVECOT_USER, From: OWNER.address },
        Folders: [
          { Alias: 'inbox', Path: 'INBOX' },
          { Alias: 'archive', Path: 'Archive' },
          { Alias: 'sent', Path: 'Sent' },
          { Alias: 'drafts', Path: 'Drafts' },
        ],
      },
    ],
    // The model shipped with Mailcairn, computed in this process: activated by the demo once the mailbox is mirrored.
    Embeddings: { Provider: 'Local' },
    // --chat: the endpoint ask_mail answers with. A local model on a CPU may take a while per call: a longer deadline than the default minute.
    ...(o.chat
      ? {
          Answering: {
            Endpoints: [
              {
                Alias: CHAT_ALIAS,
                BaseAddress: o.chat.baseAddress,
                Model: o.chat.model,
                ...(o.chat.apiKeyRef ? { ApiKey: o.chat.apiKeyRef } : {}),
                Deadline: CHAT_DEADLINE,
              },
            ],
          },
        }
      : {}),
    Storage: { Database: join(o.dir, 'mailcairn.db') },
    DataEncryption: { KeyRing: `file:${o.keyRingFile}` },
    Logging: { Level: 'info', Format: 'Json' },
  };
}

/** Until the account's first run has ended (and nothing is left to fetch), or the deadline. */
async function waitForFirstRun(service: Service): Promise<SynchronizationStatus> {
  const scheduler = service.supervisor.ref(SCHEDULER_ID);
  const end = Date.now() + SYNC_TIMEOUT_MS;
  let last: SynchronizationStatus | null = null;
  for (;;) {
    try {
      last = await scheduler.ask({ type: 'sync-scheduler.status' }, { deadlineMs: 10_000 });
      const account = last.accounts.find((a) => a.account === ACCOUNT);
      const ended = account?.lastRun != null && account.phase !== 'running';
      const more = account?.folders.some((f) => f.lastRun?.hasMoreEmails === true) ?? false;
      if (ended && (!more || account.lastRun!.outcome !== 'ok')) return last;
    } catch {
      // the scheduler may still be starting; ask again
    }
    if (Date.now() > end) {
      throw new DemoExit(
        1,
        `The first synchronization did not end within ${SYNC_TIMEOUT_MS / 1000} s. See the log in ${held.dir ?? 'the temporary directory'}.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `tools/list` against the endpoint, as a client would send it: the tool count, or why not. */
async function probeMcp(url: string, apiKey: string): Promise<{ ok: true; tools: string[] } | { ok: false; why: string }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (!res.ok) return { ok: false, why: `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}` };
    // Streamable HTTP answers with JSON or with one SSE event carrying it.
    const json = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('')
      : text;
    const body = JSON.parse(json) as { result?: { tools?: Array<{ name: string }> }; error?: { message?: string } };
    if (body.error) return { ok: false, why: `JSON-RPC error: ${body.error.message ?? 'unknown'}` };
    return { ok: true, tools: (body.result?.tools ?? []).map((t) => t.name) };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
}

function printSummary(o: {
  url: string;
  port: number;
  dir: string;
  dovecot: Dovecot;
  smtp: SmtpSink;
  mailDir: string;
  mailbox: DemoMailbox;
  status: SynchronizationStatus;
  syncMs: number;
  probe: Awaited<ReturnType<typeof probeMcp>>;
  warnings: string[];
  apiKey: string;
  adminUrl: string;
  adminKeyFile: string;
  chat: ChatOption | null;
}): void {
  const account = o.status.accounts.find((a) => a.account === ACCOUNT);
  const folders = (account?.folders ?? []).map((f) => `${f.alias} ${f.lastRun?.storedEmailCount ?? 0}`).join(', ');
  const outcome = account?.lastRun?.outcome ?? 'none';
  const headers = { Authorization: `Bearer ${o.apiKey}` };
  const cursor = JSON.stringify({ mcpServers: { mailcairn: { url: o.url, headers } } }, null, 2);
  const vscode = JSON.stringify({ servers: { mailcairn: { type: 'http', url: o.url, headers } } }, null, 2);
  const indent = (text: string): string =>
    text
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n');
  out();
  out('Mailcairn demo');
  out(`  Dovecot     127.0.0.1:${o.dovecot.port} (pid ${o.dovecot.pid}), user ${DOVECOT_USER}: a private server for this demo`);
  out(
    `  Mailbox     ${o.mailbox.inbox.length + o.mailbox.archive.length} generated messages (seed ${SEED}): INBOX ${o.mailbox.inbox.length}, Archive ${o.mailbox.archive.length}; ${o.mailbox.replies} replies in threads, ${o.mailbox.attachments} with attachments`,
  );
  out(`  Mirrored    account "${ACCOUNT}": ${folders} (first run ${outcome}, ${(o.syncMs / 1000).toFixed(1)} s)`);
  out(`  Files       ${o.dir} (config, key ring, database, mailcairn.log, sent-mail/); removed on Ctrl-C`);
  if (outcome !== 'ok') out(`  !           the first run ended "${outcome}": see mailcairn.log in the directory above`);
  out();
  out(`MCP endpoint   ${o.url}`);
  out(
    o.probe.ok
      ? `               answers: ${o.probe.tools.length} tools (${o.probe.tools.join(', ')})`
      : `               did not answer tools/list yet: ${o.probe.why}`,
  );
  if (o.chat) {
    out(
      `Answering      ${CHAT_ALIAS}: model ${o.chat.model} at ${new URL(o.chat.baseAddress).host}, ${o.chat.apiKeyRef ? `API key from $${CHAT_KEY_VARIABLE}` : 'no API key'};`,
    );
    out('               ask_mail is offered once the mailbox is embedded (the demo then asks it one question)');
  }
  out();
  out(`API key       ${o.apiKey}`);
  out('               generated for this demo; present it as "Authorization: Bearer <key>" (docs/security.md)');
  if (o.warnings.length > 0) {
    out('The service warns:');
    for (const w of o.warnings) out(`  - ${w}`);
    out('Expected for a demo on loopback; docs/connecting-agents.md explains them.');
  }
  out();
  out('Claude Code:');
  out(`    claude mcp add --transport http mailcairn ${o.url} --header "Authorization: Bearer ${o.apiKey}"`);
  out();
  out('Cursor (~/.cursor/mcp.json) and other clients taking "mcpServers":');
  out(indent(cursor));
  out();
  out('VS Code (.vscode/mcp.json):');
  out(indent(vscode));
  out();
  out('MCP Inspector (needs Node 22 or newer):');
  out('    npx @modelcontextprotocol/inspector');
  out(`    then open the link it prints, choose Transport Type "Streamable HTTP", URL ${o.url},`);
  out(`    add the header Authorization: Bearer ${o.apiKey}, Connect`);
  out();
  out('Try it by hand:');
  out(`    curl -s -X POST ${o.url} -H 'authorization: Bearer ${o.apiKey}' -H 'content-type: application/json' \\`);
  out(`      -H 'accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`);
  out();
  out('Claude Desktop and more: docs/connecting-agents.md');
  out();
  out(`Sending        SMTP sink ${o.smtp.host}:${o.smtp.port} (no TLS, no login; it delivers nothing onwards)`);
  out('               what an agent sends arrives there and is printed here (Message-ID, recipients),');
  out(`               kept as .eml files in ${o.mailDir}, with its copy filed in Sent. Ask your agent, e.g.:`);
  const correspondent = latestCorrespondent(o.mailbox);
  out(
    correspondent
      ? `    Reply to the latest email from ${correspondent} saying I will get back to them by Friday.`
      : `    Send an email to someone@example.org with the subject "Hello" saying hello from ${OWNER.name}.`,
  );
  out();
  out('Contacts       correspondents are collected into the contact book as the mailbox is mirrored');
  out('               (docs/contacts.md); the contact tools look them up and keep what you assert. Ask, e.g.:');
  out(
    correspondent
      ? `    Look up ${correspondent} in my contacts and add a note that they prefer mornings.`
      : '    List my contacts, then add Sato Haruki <haruki@example.jp> as a contact.',
  );
  out();
  out(`Operator API  ${o.adminUrl}/api/admin (docs/admin-api.md), for the mailcairn client (docs/cli.md):`);
  out(`    node --import tsx bin/mailcairn.ts login --endpoint ${o.adminUrl} --name demo < ${o.adminKeyFile}`);
  out('    node --import tsx bin/mailcairn.ts mailbox status');
  out('    node --import tsx bin/mailcairn.ts embedding status   # the semantic half: coverage, spend');
  out('    node --import tsx bin/mailcairn.ts contact list --origin Collected   # the book the mailbox filled');
  out('    node --import tsx bin/mailcairn.ts logout demo        # when done: forgets the profile');
  out('Press Ctrl-C to stop (the service, the SMTP sink, then Dovecot; the temporary directory is removed).');
}

type Found = { rank: number | null; count: number; mode: string; state: string };

/** `search_emails` of the demo's query through the MCP endpoint, as an agent calls it: where the written message ranks. */
async function searchAsAgent(url: string, apiKey: string): Promise<Found> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'mailcairn-demo', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
  try {
    const result = await client.callTool({ name: 'search_emails', arguments: { queryText: SEMANTIC_QUERY, resultLimit: 10 } });
    const answer = result.structuredContent as { matches: Array<{ subject?: string }>; retrievalMode: string; semanticSearch: string };
    const at = answer.matches.findIndex((m) => m.subject === SEMANTIC_SUBJECT);
    return { rank: at < 0 ? null : at + 1, count: answer.matches.length, mode: answer.retrievalMode, state: answer.semanticSearch };
  } finally {
    await client.close();
  }
}

/**
 * Activates the local model (an operator's act: the demo is the operator here), waits while it
 * embeds the mailbox, and shows the same search before and after: lexical alone misses the
 * reminder, hybrid finds it (measured: #2 of 10 with the local model).
 */
async function showSemanticSearch(service: Service, url: string, apiKey: string): Promise<boolean> {
  const embedding = service.supervisor.ref(EMBEDDING_ID);
  const before = await searchAsAgent(url, apiKey);
  const activated = await embedding.ask({ type: 'embedding.activate' }, { deadlineMs: 30_000 });
  note(`Semantic search: activated the local model; embedding ${activated.forecast.passages} passages on threads of its own (about half a minute)…`);
  const end = Date.now() + EMBED_TIMEOUT_MS;
  let told = Date.now();
  for (;;) {
    const status = await embedding.ask({ type: 'embedding.status' }, { deadlineMs: 30_000 });
    const serving = status.serving;
    if (serving !== null && serving.emailCount > 0 && serving.embeddedEmailCount === serving.emailCount) break;
    if (Date.now() > end) {
      note('Semantic search: the mailbox is still being embedded; `mailcairn embedding status` shows how far.');
      return false;
    }
    if (Date.now() - told > 15_000 && serving !== null) {
      note(`Semantic search: ${serving.embeddedEmailCount} of ${serving.emailCount} emails embedded…`);
      told = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const after = await searchAsAgent(url, apiKey);
  const where = (f: Found): string => (f.rank === null ? `not among its ${f.count} result(s)` : `ranked #${f.rank} of ${f.count}`);
  out();
  out(`Semantic search ready (docs/semantic-search.md). search_emails "${SEMANTIC_QUERY}":`);
  out(`    before the activation (${before.mode}): the reminder "${SEMANTIC_SUBJECT}" was ${where(before)}`);
  out(`    now (${after.mode}, semanticSearch ${after.state}): it is ${where(after)}`);
  out('    Ask your agent the same question in its own words.');
  return true;
}

/** For the terminal, the model's answer: its lines kept, control characters and all else as `printable` does. */
const printableText = (s: string): string =>
  s
    .split(/\r?\n/)
    .map((line) => line.replace(/[\x00-\x1f\x7f-\x9f]/g, '?'))
    .join('\n');

/** Where an OpenAI-compatible server lists its models, for the hint: the base address's rule, without a query. */
function modelsUrl(baseAddress: string): string {
  const url = new URL(baseAddress);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${/\/v1$/.test(path) ? path : `${path}/v1`}/models`;
}

/** What the service logged for a 54001, in words, with what to check. */
function describeProviderFailure(f: ProviderFailure | null, chat: ChatOption): string {
  const host = new URL(chat.baseAddress).host;
  if (f === null) return `the chat endpoint at ${host} failed (see answering.provider-failed in mailcairn.log)`;
  switch (f.code) {
    case 71001:
      return `the chat endpoint at ${host} refused the credential (HTTP ${f.status ?? '401/403'}): ${
        chat.apiKeyRef ? `check the key in ${CHAT_KEY_VARIABLE}` : `set ${CHAT_KEY_VARIABLE} to a key it accepts`
      } (71001)`;
    case 73001:
      return `the chat endpoint at ${host} answered with neither text nor a tool call: model ${chat.model} may not support tool calls; try another with --chat-model (73001)`;
    case 72001:
      if (f.failure === 'refused-connection' || f.failure === 'network' || f.failure === 'reset')
        return `nothing answered at ${host} (${f.failure}): is the server running? (72001)`;
      if (f.failure === 'timeout') return `the chat endpoint at ${host} did not answer within ${CHAT_DEADLINE} per call (72001)`;
      if (f.status === 404)
        return `the chat endpoint at ${host} answered HTTP 404: it may not have the model ${chat.model}, or the address is not its base (72001)`;
      // Ollama answers 400 for a model that cannot call tools.
      if (f.status === 400)
        return `the chat endpoint at ${host} refused the request (HTTP 400): model ${chat.model} may not support tool calls; try another with --chat-model (72001)`;
      return `the chat endpoint at ${host} did not answer (${f.failure ?? 'unknown'}${f.status !== null ? `, HTTP ${f.status}` : ''}) (72001)`;
    default:
      return `the chat endpoint at ${host} failed (${f.code ?? 'no code'}; see mailcairn.log)`;
  }
}

/**
 * `ask_mail` of the demo's question through the MCP endpoint, as an agent calls it: prints the
 * answer and the messages it read. A failure is told in words with what to check; it never ends the demo.
 */
async function askAsAgent(url: string, apiKey: string, chat: ChatOption): Promise<void> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  out();
  out(`ask_mail (docs/ask-mail.md), answered by model ${chat.model} at ${new URL(chat.baseAddress).host}: "${ASK_QUESTION}"`);
  note('ask_mail: asking the chat endpoint (a local model may take a minute or more)…');
  const client = new Client({ name: 'mailcairn-demo', version: '1.0.0' });
  lastProviderFailure = null;
  let result: { isError?: boolean; structuredContent?: unknown };
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
    result = (await client.callTool({ name: 'ask_mail', arguments: { question: ASK_QUESTION } }, undefined, { timeout: ASK_TIMEOUT_MS })) as typeof result;
  } catch (err) {
    out(`    no answer: the MCP call failed: ${printable((err as Error).message)}`);
    return;
  } finally {
    await client.close().catch(() => undefined);
  }
  if (result.isError) {
    const refusal = (result.structuredContent ?? {}) as { code?: number; message?: string };
    if (refusal.code === 54001) {
      // The reason is in the log line the service wrote before it answered; it reaches this process a moment later.
      for (let i = 0; i < 20 && lastProviderFailure === null; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      out(`    no answer (54001): ${describeProviderFailure(lastProviderFailure, chat)}.`);
      out(`    Check the endpoint: curl -s ${modelsUrl(chat.baseAddress)} should list ${chat.model}.`);
      out(`    With Ollama: \`ollama serve\`, then \`ollama pull ${chat.model}\`; the demo goes on without answers.`);
    } else {
      out(`    no answer (${refusal.code ?? 'error'}): ${printable(refusal.message ?? 'the call was refused')}`);
    }
    return;
  }
  const answer = result.structuredContent as AskMailResult;
  out('    answer:');
  for (const line of printableText(answer.answer).split('\n')) out(`      ${line}`);
  const cited = answer.citations.filter((c) => c.cited).length;
  out(`    citations: ${answer.citations.length} read, ${cited} cited (${answer.lookupCount} lookup(s), ${answer.retrievalMode})`);
  const shown = 10;
  for (const c of answer.citations.slice(0, shown)) out(`      ${c.cited ? 'cited' : 'read '}  ${printable(c.subject ?? '(no subject)')}`);
  if (answer.citations.length > shown) out(`      … and ${answer.citations.length - shown} more`);
}

async function main(): Promise<void> {
  const options = parseOptions();
  installSignals();
  ensureDovecot();

  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-demo-'));
  held.dir = dir;
  const log = demoLogSink(join(dir, 'mailcairn.log'));

  note('Starting a private Dovecot…');
  const { startDovecot } = await import('../harness/dovecot.ts');
  const password = randomBytes(18).toString('base64url');
  const dovecot = await startDovecot({ users: [{ user: DOVECOT_USER, password }] });
  held.dovecot = dovecot;

  note(`Placing ${ARCHIVED + IN_INBOX} generated messages (seed ${SEED})…`);
  const mailbox = await placeMailbox(dovecot);

  note('Starting the SMTP sink…');
  const mailDir = join(dir, 'sent-mail');
  const smtp = await startSink(mailDir);
  held.smtp = smtp;

  const passwordFile = join(dir, 'imap-password');
  writeFileSync(passwordFile, password, { mode: 0o600 });
  const keyRingFile = join(dir, 'keyring.json');
  keyringNew({ out: keyRingFile });
  const apiKey = `mc_${randomBytes(24).toString('base64url')}`;
  const apiKeyFile = join(dir, 'mcp-api-key');
  writeFileSync(apiKeyFile, apiKey, { mode: 0o600 });
  const adminKeyFile = join(dir, 'admin-api-key');
  writeFileSync(adminKeyFile, `mc_${randomBytes(24).toString('base64url')}`, { mode: 0o600 });
  const port = options.port ?? (await reservePort());
  const adminPort = await reservePort();
  const configFile = join(dir, 'mailcairn.json');
  writeFileSync(
    configFile,
    `${JSON.stringify(demoConfig({ dir, port, adminPort, dovecot, smtp, passwordFile, keyRingFile, apiKeyFile, adminKeyFile, chat: options.chat }), null, 2)}\n`,
    { mode: 0o600 },
  );

  note('Starting Mailcairn and mirroring the mailbox…');
  const started = Date.now();
  try {
    held.service = await startService({
      configFile,
      env: {},
      log: createLogger({ level: 'info', format: 'Json', destination: { write: log } }),
      hostLogSink: log,
    });
  } catch (err) {
    const detail = err instanceof AppError ? `${err.message} (${err.code})` : err instanceof Error ? err.message : String(err);
    throw new DemoExit(
      1,
      `Mailcairn did not start: ${detail}${options.port !== null ? `\n(--port ${options.port}: try another port, or leave --port out)` : ''}`,
    );
  }
  // The listener keeps the process alive; this keeps it alive even if the endpoint is not served.
  held.keepAlive = setInterval(() => {}, 1 << 30);
  const status = await waitForFirstRun(held.service);
  const syncMs = Date.now() - started;

  const warnings = describePosture(held.service.config).warnings.map((w) => `${w.setting}: ${w.message}`);
  const url = `http://127.0.0.1:${port}/mcp`;
  const probe = await probeMcp(url, apiKey);
  printSummary({
    url,
    port,
    dir,
    dovecot,
    smtp,
    mailDir,
    mailbox,
    status,
    syncMs,
    probe,
    warnings,
    apiKey,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    adminKeyFile,
    chat: options.chat,
  });
  if (!probe.ok) return;
  const hybrid = await showSemanticSearch(held.service, url, apiKey);
  if (options.chat === null) {
    out('    With -- --chat URL (an OpenAI-compatible chat endpoint, e.g. Ollama), the demo also asks ask_mail a question.');
  } else if (hybrid) {
    await askAsAgent(url, apiKey, options.chat);
  } else {
    out('ask_mail is offered once the mailbox is embedded: ask your agent then.');
  }
}

main().catch(async (err: unknown) => {
  const exit = err instanceof DemoExit ? err : null;
  note(exit ? `\n${exit.message}` : `\ndemo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  await stopAll();
  process.exit(exit?.exitCode ?? 1);
});
