/**
 * The sentence of a 400 from a failed zod parse of a query string or JSON
 * body (docs/admin-api.md "Refusals": a sentence naming what to change).
 *
 * A schema states its own sentences where it can (`error:` on a field); the
 * fallbacks here name the member and what it must be. Never does a sentence
 * quote what the caller sent: a body may hold a token or mail text.
 */
import type { z } from 'zod';

type Where = 'query' | 'body';

export function sentenceOf(error: z.ZodError, where: Where): string {
  const issue = error.issues[0];
  if (issue === undefined) return where === 'query' ? 'Change the query string.' : 'Change the request body.';
  const member = issue.path.map(String).join('.');
  const place = where === 'query' ? 'query parameter' : 'member';
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = issue.keys.filter((k) => /^[A-Za-z0-9_.-]{1,40}$/.test(k));
      const named = keys.length > 0 ? ` ${keys.join(', ')}` : 's it does not know';
      return where === 'query'
        ? `Leave out the query parameter${named}; this route does not take it.`
        : `Leave out the member${named}; this route does not take it.`;
    }
    case 'invalid_type':
      if (issue.path.length === 0) return 'Send a JSON object as the body.';
      // A field's own sentence, when its schema states one, beats the generic.
      if (issue.message && !issue.message.startsWith('Invalid input')) return predicate(issue.message, place, member) ?? issue.message;
      return issue.input === undefined ? `Add the ${place} ${member}.` : `Send the ${place} ${member} as ${describeExpected(issue.expected)}.`;
    default:
      if (issue.message && !issue.message.startsWith('Invalid') && !issue.message.startsWith('Too '))
        return predicate(issue.message, place, member) ?? issue.message;
      return `Change the ${place} ${member}: ${issue.message}.`;
  }
}

/**
 * A schema message written as a predicate about its member (lower case:
 * "must not be empty", as the shared record schemas of actors/<name>/protocol.ts
 * state them for both surfaces), made a sentence naming the member.
 */
function predicate(message: string, place: string, member: string): string | null {
  if (!/^[a-z]/.test(message)) return null;
  if (member === '') return `Change the request: ${message}.`;
  return /^must\b/.test(message) ? `The ${place} ${member} ${message}.` : `Change the ${place} ${member}: ${message}.`;
}

function describeExpected(expected: string): string {
  switch (expected) {
    case 'string':
      return 'text';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'object':
      return 'a JSON object';
    case 'array':
      return 'a list';
    default:
      return expected;
  }
}
