/**
 * `Storage`: a `Database` written as a URL names a libSQL server
 * (`libsql://`, `https://`, or `http://` to this machine only, since the
 * token would travel in clear text); `AuthToken` means something only then.
 */
import { isLoopbackHost } from '../ip-address.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

export function isServerUrl(database: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(database);
}

export function storageProblems(config: Config): Problem[] {
  const { Database, AuthToken } = config.Storage;
  const problems: Problem[] = [];
  if (isServerUrl(Database)) {
    let url: URL | undefined;
    try {
      url = new URL(Database);
    } catch {
      problems.push(problem('Storage:Database', 'is not a valid server URL'));
    }
    if (url !== undefined) {
      if (!['libsql:', 'https:', 'http:'].includes(url.protocol)) {
        problems.push(problem('Storage:Database', 'must be a file path, or a libsql://, https:// or http:// server URL'));
      } else if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
        problems.push(problem('Storage:Database', 'http:// is clear text and allowed only to a loopback host; use libsql:// or https://'));
      }
      if (url.username !== '' || url.password !== '' || url.searchParams.has('authToken')) {
        problems.push(problem('Storage:Database', 'must not carry credentials; write the token as Storage:AuthToken (a secret reference)'));
      }
    }
  } else if (AuthToken !== undefined) {
    problems.push(problem('Storage:AuthToken', 'is only used with a libSQL server URL in Storage:Database, which is a file path here'));
  }
  return problems;
}
