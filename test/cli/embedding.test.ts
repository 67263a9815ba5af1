/**
 * `mailcairn embedding status | activate` against a service mirroring a
 * private Dovecot, with the OpenAI-compatible stand-in as the provider:
 * - `status` prints every status line for a person, and the route's answer
 *   with `--output json`;
 * - `activate` with piped input and no `--yes`: the estimate (forecast,
 *   passages, characters, approximate tokens) on standard output, the
 *   refusal on standard error, nothing POSTed and nothing sent to the
 *   provider; a piped "yes" answers nothing; on a terminal the question is
 *   shown and "n" declines;
 * - a read-only credential reads the estimate and is stopped at the write;
 * - `activate --yes --output json` prints the activation's answer; then
 *   `activate` asks nothing (it would spend nothing) and says so;
 * - nothing declared: refused with what to declare, nothing POSTed;
 * - no key, subject or address in any output.
 */
import t from 'tap';
import { startDovecot } from '../harness/dovecot.ts';
import { startEmbeddingStandin } from '../harness/embedding-standin.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { sensitiveStrings } from '../helpers/privacy.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, onTerminal, startCliService, type CliResult } from './harness.ts';

t.setTimeout(300_000);

const MESSAGES = 30;
const POST_ACTIVATION = 'POST /api/admin/embeddings/activation';

t.test('embedding commands', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const mail = [...generateMailbox({ seed: 31, count: MESSAGES, profile: 'small' })];
  await writeMaildir(dovecot, 'pat', 'INBOX', mail);
  const standin = await startEmbeddingStandin({ dimensions: 48 });
  t.teardown(() => standin.close());
  const svc = await startCliService(t, {
    dovecot,
    synchronization: true,
    accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }],
    sections: { Embeddings: { BaseAddress: standin.baseAddress, Model: 'standin-embed', Dimensions: 48 } },
  });
  const proxy = await forwardingProxy(t, svc.admin);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const run = async (args: string[], input?: string): Promise<CliResult> => {
    const result = await cli(home, args, input === undefined ? {} : { input });
    results.push(result);
    return result;
  };
  const json = <T>(result: CliResult): T => {
    t.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  t.equal((await loginWithKey(home, proxy.url, svc.keys.operator)).code, 0);

  // Passages exist once the mail is mirrored and indexed.
  const end = Date.now() + 120_000;
  for (;;) {
    const sync = json<{ accounts: Array<{ folders: Array<{ lastSeenUid: number | null; notYetIndexedEmailCount?: number }> }> }>(
      await run(['mailbox', 'status', '--output', 'json']),
    );
    const folder = sync.accounts[0]?.folders[0];
    if (folder?.lastSeenUid === MESSAGES && folder.notYetIndexedEmailCount === 0) break;
    if (Date.now() > end) throw new Error('the mirror was not indexed in time');
    await new Promise((r) => setTimeout(r, 300));
  }

  // Status, for a person: every line.
  const table = await run(['embedding', 'status']);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /Declared profile\s+standin-embed \(openai-compatible, 48 dimensions, cosine\)/);
  t.match(table.stdout, /Serving profile\s+none: semantic search is inactive/);
  t.match(table.stdout, /Reindex\s+none/);
  t.match(table.stdout, /Next pass\s+none/);
  t.match(table.stdout, /Provider\s+healthy/);
  t.match(table.stdout, /Spend\s+0 of 10000000 characters, period ends at \d{4}-\d\d-\d\dT/);
  t.match(table.stdout, /Waiting\s+no/);
  t.notMatch(table.stderr, /mailcairn:/, 'no failure on standard error');
  const asJson = json<{ declared: { model: string }; serving: null; spend: { maxCharacters: number } }>(await run(['embedding', 'status', '--output', 'json']));
  t.equal(asJson.declared.model, 'standin-embed');
  t.equal(asJson.serving, null);
  t.equal(asJson.spend.maxCharacters, 10_000_000);

  // Piped input, no --yes: the estimate, then refused; nothing POSTed, nothing sent.
  const unasked = await run(['embedding', 'activate']);
  t.equal(unasked.code, 1);
  t.match(unasked.stdout, /Activating embeds \d+ passages/, 'the forecast sentence on standard output');
  const passages = Number(/Passages to send: (\d+)/.exec(unasked.stdout)?.[1]);
  t.ok(passages >= MESSAGES, `passages on standard output (${passages})`);
  const characters = Number(/Characters: (\d+) \(about (\d+) tokens/.exec(unasked.stdout)?.[1]);
  t.match(unasked.stdout, new RegExp(`Characters: ${characters} \\(about ${Math.ceil(characters / 4)} tokens`), 'approximate tokens');
  t.match(unasked.stderr, /standard input is not a terminal, and piped input never answers one; pass --yes/);
  t.notMatch(unasked.stdout, /Refused/, 'guidance is not on standard output');
  const answeredByPipe = await run(['embedding', 'activate'], 'yes\n');
  t.equal(answeredByPipe.code, 1, 'a "yes" piped in answers nothing');
  const estimateOnly = await run(['embedding', 'activate', '--output', 'json']);
  t.equal(estimateOnly.code, 1);
  t.equal(JSON.parse(estimateOnly.stdout).effect, 'start', 'a JSON reader gets the forecast it read');

  // On a terminal the question is shown; "n" declines.
  const declined = await onTerminal(home, ['embedding', 'activate'], [{ after: /\[y\/N\] /, send: 'n\r' }], { NO_COLOR: '1' });
  t.equal(declined.code, 1);
  t.match(declined.screen, /Activate standin-embed \(openai-compatible, 48 dimensions, cosine\) and send \d+ passages/, 'the question is asked');
  t.match(declined.screen, /This starts a provider bill\./);
  t.match(declined.screen, /Not confirmed; nothing was changed\./);
  t.notOk(proxy.requests.includes(POST_ACTIVATION), 'nothing was POSTed');

  // A read-only credential reads the estimate and is stopped at the write.
  t.equal((await loginWithKey(home, proxy.url, svc.keys.reader, ['--name', 'reader'])).code, 0);
  const readOnly = await run(['embedding', 'activate', '--yes']);
  t.equal(readOnly.code, 1);
  t.match(readOnly.stdout, /Passages to send: \d+/);
  t.match(readOnly.stderr, /does not hold the permission service\.admin\.spend/);
  t.match(readOnly.stderr, /Nothing was activated\./);
  t.equal((await run(['switch', '127.0.0.1'])).code, 0);
  t.equal(json<{ serving: null }>(await run(['embedding', 'status', '--output', 'json'])).serving, null, 'nothing was activated');
  t.equal(standin.requests.length, 0, 'nothing was sent to the provider');

  // Agreed: the POST's answer as JSON.
  const activated = json<{ outcome: string; generation: number; forecast: { passages: number } }>(
    await run(['embedding', 'activate', '--yes', '--output', 'json']),
  );
  t.same([activated.outcome, activated.generation, activated.forecast.passages], ['started', 1, passages]);
  const serving = await run(['embedding', 'status']);
  t.match(
    serving.stdout,
    /Serving profile\s+generation 1 since \S+: standin-embed \(openai-compatible, 48 dimensions, cosine\), \d+ of 30 stored emails embedded/,
  );

  // Serving already: no question, nothing spent, even with piped input.
  const again = await run(['embedding', 'activate']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /standin-embed \(openai-compatible, 48 dimensions, cosine\) serves already \(generation 1\); nothing was begun and nothing spent\./);
  t.notMatch(again.stdout, /Passages to send/);
  t.notMatch(again.stderr, /\[y\/N\]|Refused|confirmation/, 'nothing asked');

  // Nothing declared: refused with what to declare, nothing POSTed.
  const bare = await startCliService(t);
  const bareProxy = await forwardingProxy(t, bare.admin);
  t.equal((await loginWithKey(home, bareProxy.url, bare.keys.operator, ['--name', 'bare'])).code, 0);
  const undeclared = await run(['embedding', 'activate', '--yes']);
  t.equal(undeclared.code, 1);
  t.match(
    undeclared.stderr,
    /No embedding profile is declared, so there is nothing to activate: set Embeddings:Provider to Local, or Embeddings:BaseAddress, Model and Dimensions/,
  );
  t.notOk(bareProxy.requests.includes(POST_ACTIVATION), 'nothing was POSTed');
  const bareStatus = await run(['embedding', 'status']);
  t.match(bareStatus.stdout, /Declared profile\s+none/);
  t.match(bareStatus.stdout, /Provider\s+not declared/);

  const everything = [...results.flatMap((r) => [r.stdout, r.stderr]), declined.screen];
  t.same(leaks([...svc.secrets, ...bare.secrets], ...everything), [], 'no key in any output');
  const sensitive = sensitiveStrings(mail.map((m) => m.raw));
  t.same(leaks(sensitive, ...everything), [], 'no subject or address in any output');
  t.same(leaks(sensitive, svc.logs.raw()), [], 'no subject or address in any log line');
  t.notOk(
    results.some((r) => r.stdout.includes('\u001b')),
    'no colour when piped',
  );
});
