/**
 * `npm run demo -- --chat URL`, run whole as a user runs it (test/dev/demo.ts
 * in a child process: a private Dovecot, the generated mailbox, the local
 * embedding model), with the scripted chat stand-in as the endpoint: once
 * hybrid search serves, the demo asks ask_mail its question and prints the
 * answer and the citations; Ctrl-C then stops it cleanly. The stand-in makes
 * one search_mail lookup and answers citing the reminder the lookup returned.
 * The API key from MAILCAIRN_DEMO_CHAT_API_KEY reaches the endpoint and is
 * never printed. Also: a --chat that is no usable base address ends the demo
 * with exit 2 before anything starts.
 *
 * Heavy (about two minutes: the mailbox is mirrored and embedded), bounded:
 * the child is sent SIGINT, then SIGKILL, by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { type RecordedChatRequest, type StandinAnswer, startChatStandin, toolResultsOf } from '../harness/chat-standin.ts';

const DEMO = fileURLToPath(new URL('./demo.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEY = 'demo-chat-key-0123456789abcdef';
const RUN_TIMEOUT_MS = 420_000;
const ASK_TIMEOUT_MS = 60_000;

t.setTimeout(RUN_TIMEOUT_MS + ASK_TIMEOUT_MS + 60_000);

type Run = { child: ChildProcess; stdout: () => string; stderr: () => string; exited: Promise<number | null> };

function runDemo(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  // A process group of its own: an overrun ends the demo and what it started (its Dovecot, its SMTP sink) at once.
  const child = spawn(process.execPath, ['--import', 'tsx', DEMO, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1)?.slice(0, 300) ?? '';
}

/** Until `done` holds of the output, the child exits, or the deadline passes. */
async function waitFor(run: Run, done: (stdout: string) => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  let exited = false;
  void run.exited.then(() => {
    exited = true;
  });
  while (Date.now() < end && !exited) {
    if (done(run.stdout())) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return done(run.stdout());
}

t.test('--chat that is no usable base address: exit 2, nothing started', async (t) => {
  for (const [chat, why] of [
    ['ftp://127.0.0.1:11434', /must be an http or https URL/],
    ['http://models.example.org:11434', /clear text is only allowed to a loopback host/],
    ['http://user:secret-pass@127.0.0.1:11434', /must not carry user information/],
  ] as const) {
    const run = runDemo(['--chat', chat]);
    t.equal(await run.exited, 2, `${chat}: exit 2`);
    t.match(run.stderr(), why);
    t.notOk(run.stderr().includes('Starting a private Dovecot'), 'nothing was started');
    t.notOk(run.stderr().includes('secret-pass'), 'a password in the URL is not echoed');
  }
  const run = runDemo(['--chat-model', 'llama3.1']);
  t.equal(await run.exited, 2, '--chat-model alone: exit 2');
  t.match(run.stderr(), /--chat-model needs --chat URL/);
});

t.test('--chat: the demo asks ask_mail its question and prints the answer and citations', async (t) => {
  const chat = await startChatStandin();
  t.teardown(() => chat.close());
  chat.script(
    { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: 'bill still to pay' } }] },
    {
      kind: 'respond',
      respond: (request: RecordedChatRequest): StandinAnswer => {
        const text = toolResultsOf(request)
          .map((r) => r.content)
          .join('\n');
        // The reference of the element holding the reminder, as a model would cite it.
        const ref = /<email ref="(E\d+)"(?:(?!<\/email>)[\s\S])*March bill/.exec(text)?.[1] ?? 'none';
        return { kind: 'text', text: `Yes: the March bill of EUR 1,240 for the office cleaning is still outstanding [${ref}].` };
      },
    },
  );

  const run = runDemo(['--chat', chat.baseAddress, '--chat-model', 'scripted'], { MAILCAIRN_DEMO_CHAT_API_KEY: KEY });
  const killGroup = (): void => {
    if (run.child.exitCode !== null || run.child.signalCode !== null || run.child.pid === undefined) return;
    try {
      process.kill(-run.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  const kill = setTimeout(killGroup, RUN_TIMEOUT_MS + ASK_TIMEOUT_MS + 30_000);
  t.teardown(() => {
    clearTimeout(kill);
    killGroup();
  });

  // The mailbox mirrored and embedded, then the question: the stand-in answers at once.
  const ready = await waitFor(run, (out) => /Semantic search ready/.test(out), RUN_TIMEOUT_MS);
  // The demo's notes and errors name no mail: its last line says in the assertion itself why it stopped short.
  t.ok(ready, `hybrid search came to serve${ready ? '' : ` (exit ${run.child.exitCode}; last on stderr: ${lastLine(run.stderr())})`}`);
  const answered = ready && (await waitFor(run, (out) => / {6}cited {2}Reminder/.test(out) || /no answer/.test(out), ASK_TIMEOUT_MS));
  const stdout = run.stdout();
  t.ok(answered, `the demo printed an answer with its citations${answered ? '' : ` (last on stderr: ${lastLine(run.stderr())})`}`);
  if (!answered) t.comment(`stdout:\n${stdout}\nstderr:\n${run.stderr()}`);

  t.match(stdout, /Answering {6}demo-chat: model scripted at 127\.0\.0\.1:\d+, API key from \$MAILCAIRN_DEMO_CHAT_API_KEY/, 'the summary names the endpoint');
  t.match(stdout, /ask_mail .*answered by model scripted.*"Is there a bill I still have to pay, and how much is it\?"/);
  t.match(stdout, /answer:\n {6}Yes: the March bill of EUR 1,240 for the office cleaning is still outstanding \[E\d+\]\./, 'the answer is printed');
  t.match(stdout, /citations: \d+ read, 1 cited \(1 lookup\(s\), hybrid\)/);
  t.match(stdout, / {6}cited {2}Reminder: your March bill is still outstanding\n/, 'the reminder is the cited message');
  t.notMatch(stdout, /no answer/);

  t.equal(chat.requests.length, 2, 'one lookup, then the answer');
  t.equal(chat.requests[0]?.model, 'scripted', 'the model named with --chat-model');
  t.ok(
    chat.requests.every((r) => r.authorization === `Bearer ${KEY}`),
    'the key from the environment reaches the endpoint',
  );
  t.notOk(stdout.includes(KEY) || run.stderr().includes(KEY), 'the key is never printed');

  run.child.kill('SIGINT');
  t.equal(await run.exited, 0, 'Ctrl-C stops the demo cleanly');
  t.match(run.stderr(), /Stopped\./);
});
