/**
 * Posture lines of everything but the HTTP endpoints: proxy trust, the
 * deployment address, storage, the key ring, accounts and the background
 * work. A reference is shown by its scheme only; an account by its Id,
 * hosts and folder aliases (never a login name).
 */
import { trustsEveryone } from './checks/reverse-proxy.ts';
import { isServerUrl } from './checks/storage.ts';
import type { Config } from './schema.ts';
import { defaultMailPort } from './schema/accounts.ts';
import { formatTimeSpan } from './schema/time-span.ts';

function scheme(ref: string): string {
  return ref.slice(0, ref.indexOf(':') + 1);
}

function accountLines(config: Config): string[] {
  if (config.Accounts.length === 0) return ['Accounts: none configured'];
  return config.Accounts.map((account, index) => {
    const imap = account.Imap;
    const parts = [
      `IMAP ${imap.Host}:${imap.Port ?? defaultMailPort('Imap', imap.Security)} ${imap.Security} (${imap.OAuth !== undefined ? 'OAuth' : 'password'})`,
    ];
    if (account.Smtp !== undefined) {
      const smtp = account.Smtp;
      const login = smtp.OAuth !== undefined ? 'OAuth' : smtp.Password !== undefined ? 'password' : 'no login';
      parts.push(`SMTP ${smtp.Host}:${smtp.Port ?? defaultMailPort('Smtp', smtp.Security)} ${smtp.Security} (${login})`);
    } else parts.push('no SMTP (sends nothing)');
    parts.push(`folders ${account.Folders.map((folder) => folder.Alias).join(', ')}`);
    return `Accounts:${index} (${account.Id}): ${parts.join('; ')}`;
  });
}

function storageLine(config: Config): string {
  const { Database, Synchronous } = config.Storage;
  if (!isServerUrl(Database)) return `Storage:Database: file ${Database} (synchronous ${Synchronous})`;
  const url = new URL(Database);
  return `Storage:Database: libSQL server ${url.protocol}//${url.host}${config.Storage.AuthToken !== undefined ? ' with a token' : ''}`;
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
  const emb = config.Embeddings;
  lines.push(
    emb.Model === undefined
      ? 'Embeddings: no profile declared (semantic search inactive)'
      : `Embeddings: ${emb.Model} (${emb.Dimensions ?? '?'} dimensions, ${emb.Distance}) at ${emb.BaseAddress === undefined ? '?' : new URL(emb.BaseAddress).host}; ${emb.MaxInputCharactersPerPeriod} characters per ${formatTimeSpan(emb.Period)}`,
  );
  lines.push(`EmbeddingBackfill: ${config.EmbeddingBackfill.Enabled ? `every ${formatTimeSpan(config.EmbeddingBackfill.Interval)}` : 'off'}`);
  const chat = config.Answering.Endpoints;
  lines.push(
    chat.length === 0
      ? 'Answering: no chat endpoint (questions are not answered)'
      : `Answering: ${chat.map((endpoint) => endpoint.Alias).join(', ')} (ask_mail uses ${chat[0]?.Alias ?? ''}); ${config.Answering.MaxQuestionsPerPeriod} questions per ${formatTimeSpan(config.Answering.Period)}`,
  );
  lines.push(config.Outbox.Enabled ? `Outbox: on, ${config.Outbox.MaxAttempts} attempts` : 'Outbox: off (sends stay Recorded)');
  lines.push(`MailRules: ${config.MailRules.Enabled ? 'on' : 'off'}, ${config.MailRules.Rules.length} rule(s)`);
  lines.push(config.Spam.Enabled ? `Spam: on, threshold ${config.Spam.Threshold}, action ${config.Spam.Action}` : 'Spam: off');
  lines.push(`Logging: ${config.Logging.Level}, ${config.Logging.Format}`);
  lines.push(config.Telemetry.Enabled ? `Telemetry: exported as ${config.Telemetry.ServiceName}` : 'Telemetry: off');
  return lines;
}
