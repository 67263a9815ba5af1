/**
 * Posture lines of everything but the HTTP endpoints: proxy trust, the
 * deployment address, storage, the key ring, accounts and the background
 * work. A reference is shown by its scheme only; an account by its Id,
 * hosts and folder aliases (never a login name). What this build does not
 * serve (`config/not-served.ts`) is named on one line, never described as on.
 */
import { trustsEveryone } from './checks/reverse-proxy.ts';
import { isServerUrl } from './checks/storage.ts';
import { NO_EFFECT } from './not-served.ts';
import type { Config } from './schema.ts';
import { defaultMailPort } from './schema/accounts.ts';
import { defaultLocalThreads, passagesPerMessage } from './schema/embeddings.ts';
import { formatTimeSpan } from './schema/time-span.ts';

function scheme(ref: string): string {
  return ref.slice(0, ref.indexOf(':') + 1);
}

function accountLines(config: Config): string[] {
  if (config.Accounts.length === 0) return ['Accounts: none configured'];
  return config.Accounts.map((account, index) => {
    const imap = account.Imap;
    const server = `IMAP ${imap.Host}:${imap.Port ?? defaultMailPort('Imap', imap.Security)} ${imap.Security} (${imap.OAuth !== undefined ? 'OAuth' : 'password'})`;
    const smtp = account.Smtp;
    const login = smtp === undefined ? '' : smtp.OAuth !== undefined ? 'OAuth' : smtp.Password !== undefined ? 'password' : 'no login';
    const sends =
      smtp === undefined ? 'no SMTP (cannot send)' : `SMTP ${smtp.Host}:${smtp.Port ?? defaultMailPort('Smtp', smtp.Security)} ${smtp.Security} (${login})`;
    return `Accounts:${index} (${account.Id}): ${server}; ${sends}; folders ${account.Folders.map((folder) => folder.Alias).join(', ')}`;
  });
}

function storageLine(config: Config): string {
  const { Database, Synchronous } = config.Storage;
  if (!isServerUrl(Database)) return `Storage:Database: file ${Database} (synchronous ${Synchronous})`;
  const url = new URL(Database);
  return `Storage:Database: libSQL server ${url.protocol}//${url.host}${config.Storage.AuthToken !== undefined ? ' with a token' : ''}`;
}

function outboxLine(config: Config): string {
  const outbox = config.Outbox;
  if (!outbox.Enabled) return 'Outbox: off (sends are recorded and wait; nothing is offered to SMTP)';
  const senders = config.Accounts.filter((a) => a.Smtp !== undefined).length;
  if (senders === 0) return 'Outbox: no account has an SMTP server (send tools refuse)';
  const policy = outbox.RecipientPolicy;
  const rules = policy.AllowedAddresses.length + policy.AllowedDomains.length > 0 ? 'recipients limited to the allowed list' : 'any recipient';
  const ceilings = (['PerAccount', 'PerCaller', 'PerDeployment'] as const)
    .filter((k) => outbox.Ceilings[k] !== undefined)
    .map((k) => `${k} ${outbox.Ceilings[k]}`);
  return `Outbox: ${senders} account(s) send, ${outbox.MaxAttempts} attempt(s) at most, ${rules}${policy.DeniedAddresses.length + policy.DeniedDomains.length > 0 ? ' minus the denied list' : ''}, ceilings ${ceilings.length > 0 ? `${ceilings.join(', ')} per ${formatTimeSpan(outbox.Ceilings.Period)}` : 'none'}`;
}

/** What the embedding declaration will do: nothing until an operator activates it (the store knows whether one was). */
function embeddingLine(config: Config): string {
  const e = config.Embeddings;
  const backfill = config.EmbeddingBackfill.Enabled
    ? `backfill every ${formatTimeSpan(config.EmbeddingBackfill.Interval)} when idle`
    : 'backfill off (arrivals only)';
  const spend = `at most ${e.MaxInputCharactersPerPeriod} characters per ${formatTimeSpan(e.Period)}`;
  const perMessage = passagesPerMessage(e);
  const passages = perMessage === null ? 'every passage of a message' : `the first ${perMessage} passage(s) of each message`;
  if (e.Provider === 'Local')
    return `Embeddings: Local model declared, on ${e.LocalThreads ?? defaultLocalThreads()} thread(s) below normal priority, ${passages}, ${spend}, ${backfill}; semantic search starts once activated (mailcairn embedding activate)`;
  if (e.BaseAddress === undefined || e.Model === undefined || e.Dimensions === undefined) return 'Embeddings: none declared (semantic search inactive)';
  return `Embeddings: OpenAiCompatible at ${new URL(e.BaseAddress).host}, ${e.Dimensions} dimensions, ${passages}, ${spend}, ${backfill}; semantic search starts once activated (mailcairn embedding activate)`;
}

/** What `ask_mail` will do: offered only while a chat endpoint is declared and semantic search can place a query. */
function answeringLine(config: Config): string {
  const a = config.Answering;
  const e = a.Endpoints[0];
  if (e === undefined) return 'Answering: no chat endpoint declared (ask_mail is not offered; a caller granted it is told no questions are answered)';
  const embeddings = config.Embeddings.Provider === 'Local' || config.Embeddings.BaseAddress !== undefined;
  const extra = a.Endpoints.length > 1 ? `; Answering:Endpoints beyond the first (${a.Endpoints.length - 1}) are not used` : '';
  const offered = embeddings
    ? 'ask_mail offered while semantic search can place a query'
    : 'ask_mail is not offered until an embedding profile is declared and activated';
  return `Answering: endpoint ${e.Alias} at ${new URL(e.BaseAddress).host}, at most ${e.MaxCallsPerQuestion} calls and ${e.MaxInputCharactersPerQuestion} characters per question, ${a.MaxQuestionsPerPeriod} questions per ${formatTimeSpan(a.Period)}, audit ${a.Audit.Enabled ? `kept ${formatTimeSpan(a.Audit.Retention)}` : 'off'}; ${offered}${extra}`;
}

/** What the mail rules do: how many, and whether they judge arriving mail (no rule's name or values). */
function mailRulesLine(config: Config): string {
  const count = config.MailRules.Rules.length;
  const rules = `${count} rule${count === 1 ? '' : 's'}`;
  if (!config.MailRules.Enabled) return `MailRules: ${rules}, not judging arriving mail (admin rule runs only)`;
  return count === 0 ? 'MailRules: on, no rules (nothing is judged)' : `MailRules: ${rules}, judging arriving mail`;
}

/** What spam classification will do: the engine's address (no secret in it), the mapping's threshold and the action; arriving mail only when enabled. */
function spamLine(config: Config): string {
  const s = config.Spam;
  const action = s.Action === 'Keyword' ? `action Keyword ${s.Keyword}` : s.Action === 'Move' ? `action Move to ${s.Folder}` : 'action None';
  const trusted = s.TrustedServers.length === 0 ? 'no trusted server headers' : `headers trusted from ${s.TrustedServers.length} server(s)`;
  const arriving = s.Enabled ? 'classifying arriving mail' : 'arriving mail not classified (admin runs only)';
  return `Spam: rspamd at ${s.Engine.Address}, threshold ${s.Threshold}, ${action}, ${trusted}; ${arriving}`;
}

export function workLines(config: Config): string[] {
  const lines: string[] = [];
  const proxy = config.ReverseProxy;
  lines.push(
    trustsEveryone(proxy.TrustedProxies)
      ? `ReverseProxy: forwarded headers believed from any peer, up to ${proxy.MaximumForwardedHops} hop(s)`
      : `ReverseProxy: forwarded headers believed from ${proxy.TrustedProxies.join(', ')}, up to ${proxy.MaximumForwardedHops} hop(s)`,
  );
  lines.push(
    config.Deployment.PublicBaseAddress === undefined
      ? 'Deployment:PublicBaseAddress: not set (no attachment link is issued)'
      : `Deployment:PublicBaseAddress: ${config.Deployment.PublicBaseAddress}`,
  );
  lines.push(storageLine(config));
  const keyRing = config.DataEncryption.KeyRing;
  lines.push(
    keyRing === undefined
      ? 'DataEncryption:KeyRing: not set (no refresh token can be stored, no attachment link is issued)'
      : `DataEncryption:KeyRing: ${scheme(keyRing)} reference`,
  );
  lines.push(...accountLines(config));
  const sync = config.MailSynchronization;
  lines.push(
    sync.Enabled
      ? `MailSynchronization: every ${formatTimeSpan(sync.Interval)}, ${sync.MaxConcurrentAccounts} account(s) at once, ${sync.BatchSize} messages per batch`
      : 'MailSynchronization: off (nothing is fetched)',
  );
  lines.push(outboxLine(config));
  lines.push(embeddingLine(config));
  lines.push(answeringLine(config));
  lines.push(mailRulesLine(config));
  lines.push(spamLine(config));
  lines.push(`Logging: ${config.Logging.Level}, ${config.Logging.Format}`);
  lines.push(`Not served by this release (accepted, no effect): ${NO_EFFECT.map((row) => row.setting).join(', ')}`);
  return lines;
}
