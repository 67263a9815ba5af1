/**
 * `Accounts`: the mailboxes mirrored (docs/configuration.md "Accounts"). Each
 * has an `Id` (a slug used in routes, logs and metric tags), the IMAP server,
 * an optional SMTP server and the folder aliases it mirrors. Credentials are
 * references only; an OAuth account's refresh token arrives through the admin
 * route and is stored sealed, so none is configured here.
 *
 * Rules across values (unique Ids and aliases, `Security: None` to loopback
 * only, exactly one credential) are in `config/checks/accounts.ts`.
 */
import { z } from 'zod';
import { choice, flag, host, httpUrl, list, remotePort, slug, text } from './fields.ts';
import { secretRef } from './secret-ref.ts';

const Scope = z.string({ error: 'must be text' }).min(1, { error: 'must not be empty' }).meta({ description: 'An OAuth scope' });

const MailOAuth = z
  .strictObject({
    TokenEndpoint: httpUrl("Provider's token endpoint the refresh token is redeemed at", { https: 'unless-loopback' }),
    ClientId: text('OAuth client identifier', 512),
    ClientSecret: secretRef('OAuth client secret, by reference; absent for a public client').optional(),
    Scopes: list(Scope, 'Scopes requested').default([]),
  })
  .meta({ description: 'OAuth 2 (XOAUTH2) login; the refresh token is placed through the admin route' });

function server(kind: 'IMAP' | 'SMTP') {
  return z
    .strictObject({
      Host: host(`${kind} server host`),
      Port: remotePort(`${kind} port; absent: ${kind === 'IMAP' ? '993 with Tls, 143 otherwise' : '465 with Tls, 587 with StartTls, 25 with None'}`).optional(),
      Security: choice(['Tls', 'StartTls', 'None'], 'Tls from the first byte, StartTls upgrade, or None (loopback host only)').default('Tls'),
      Username: text('Login name', 512),
      TrustedCertificate: secretRef(
        'PEM certificate (or chain) of an authority to trust for this server besides the system store, by reference; for a private or self-signed server (ours)',
      ).optional(),
      Password: secretRef('Password, by reference').optional(),
      OAuth: MailOAuth.optional(),
    })
    .meta({
      description:
        kind === 'IMAP' ? 'IMAP server; exactly one of Password or OAuth' : 'SMTP server; Password, OAuth, or neither for a relay that takes no login',
    });
}

export const Folder = z
  .strictObject({
    Alias: slug('Name agents and operators use for the folder; unique in the account'),
    Path: text('Server folder path; absent: resolved by SPECIAL-USE attribute from the alias', 1_024).optional(),
  })
  .meta({ description: 'One mirrored folder' });

export const Account = z
  .strictObject({
    Id: slug('Account identifier; unique'),
    Owner: text('The person the account belongs to (a label, not an address)').optional(),
    Imap: server('IMAP'),
    Smtp: server('SMTP')
      .extend({
        From: text(
          'Sender address of this account (From and envelope sender); absent: the SMTP login, else the IMAP login, when it is an address (ours)',
          254,
        ).optional(),
        SentCopy: flag(
          'Append a copy of each sent message to the sent folder; false for a server that files submitted mail by itself (Gmail), which would otherwise hold two (ours)',
        ).default(true),
      })
      .meta({
        description: "SMTP server the outbox sends through; Password, OAuth (the IMAP login's refresh token), or neither for a relay that takes no login",
      })
      .optional(),
    Folders: list(Folder, 'Folders mirrored, by alias').min(1, { error: 'must map at least one folder' }),
  })
  .meta({ description: 'One mirrored mailbox' });

export type Account = z.infer<typeof Account>;
export const Accounts = list(Account, 'Mailboxes mirrored');

/** A plain address (`name@example.org`): what a sender address must be. */
export const PLAIN_ADDRESS = /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+$/;

/** The address an account sends as: `Smtp:From`, else the SMTP login, else the IMAP login, whichever first is an address; null when none is. */
export function senderAddress(account: Account): string | null {
  const candidates = [account.Smtp?.From, account.Smtp?.Username, account.Imap.Username];
  return candidates.find((c): c is string => c !== undefined && PLAIN_ADDRESS.test(c)) ?? null;
}

/** The port an account server is reached on, when none is written. */
export function defaultMailPort(kind: 'Imap' | 'Smtp', security: 'Tls' | 'StartTls' | 'None'): number {
  if (kind === 'Imap') return security === 'Tls' ? 993 : 143;
  if (security === 'Tls') return 465;
  return security === 'StartTls' ? 587 : 25;
}
