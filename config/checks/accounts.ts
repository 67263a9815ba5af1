/**
 * Rules over `Accounts` (docs/configuration.md "Rules across settings"): Ids
 * unique; folder aliases unique within an account; `Security: None` only to a
 * loopback host (a password must not cross a network in clear text); an IMAP
 * server logs in with exactly one of `Password` or `OAuth`, an SMTP server
 * with at most one (none: a relay that takes no login).
 */
import { isLoopbackHost } from '../ip-address.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';
import { PLAIN_ADDRESS, senderAddress } from '../schema/accounts.ts';

type Server = Config['Accounts'][number]['Imap'];

function serverProblems(server: Server, at: readonly (string | number)[], loginRequired: boolean): Problem[] {
  const problems: Problem[] = [];
  if (server.Security === 'None' && !isLoopbackHost(server.Host)) {
    problems.push(problem([...at, 'Security'], 'None sends the login in clear text and is allowed only to a loopback host; use Tls or StartTls'));
  }
  if (server.Password !== undefined && server.OAuth !== undefined) {
    problems.push(problem(at, 'must log in with either Password or OAuth, not both'));
  } else if (loginRequired && server.Password === undefined && server.OAuth === undefined) {
    problems.push(problem(at, 'must log in with Password (a secret reference) or OAuth'));
  }
  return problems;
}

export function accountProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  const ids = new Map<string, number>();
  config.Accounts.forEach((account, index) => {
    const at = ['Accounts', index];
    const earlier = ids.get(account.Id);
    if (earlier !== undefined) problems.push(problem([...at, 'Id'], `repeats the Id of Accounts:${earlier}; account Ids are unique`));
    else ids.set(account.Id, index);
    problems.push(...serverProblems(account.Imap, [...at, 'Imap'], true));
    if (account.Smtp !== undefined) {
      problems.push(...serverProblems(account.Smtp, [...at, 'Smtp'], false));
      if (account.Smtp.From !== undefined && !PLAIN_ADDRESS.test(account.Smtp.From))
        problems.push(problem([...at, 'Smtp', 'From'], 'must be a plain address such as name@example.org (no display name)'));
      else if (senderAddress(account) === null)
        problems.push(problem([...at, 'Smtp'], 'the sender address cannot be told: write From, or log in with an address as the SMTP or IMAP Username'));
      // XOAUTH2 on SMTP uses the account's one sealed refresh token, which its sync actor redeems with Imap:OAuth.
      if (account.Smtp.OAuth !== undefined && account.Imap.OAuth === undefined)
        problems.push(
          problem([...at, 'Smtp', 'OAuth'], 'SMTP XOAUTH2 uses the refresh token of the IMAP login; configure Imap:OAuth (with scopes covering SMTP) too'),
        );
      else if (
        account.Smtp.OAuth !== undefined &&
        (account.Smtp.OAuth.TokenEndpoint !== account.Imap.OAuth?.TokenEndpoint || account.Smtp.OAuth.ClientId !== account.Imap.OAuth?.ClientId)
      )
        problems.push(problem([...at, 'Smtp', 'OAuth'], 'must name the same TokenEndpoint and ClientId as Imap:OAuth: one refresh token serves both'));
    }
    const aliases = new Map<string, number>();
    account.Folders.forEach((folder, folderIndex) => {
      const same = aliases.get(folder.Alias);
      if (same !== undefined) {
        problems.push(problem([...at, 'Folders', folderIndex, 'Alias'], `repeats the alias of Folders:${same}; aliases are unique in an account`));
      } else aliases.set(folder.Alias, folderIndex);
    });
  });
  return problems;
}
