/**
 * One sentence naming each failing member of a parsed input and what it
 * must be: what a tool's 51001 says (http/mcp/mcp-server.ts) and what an
 * `ask_mail` run tells the model of arguments it refused
 * (actors/answering/run.ts). zod's messages describe the expectation, never
 * the value received, so nothing the caller wrote is repeated back or
 * logged. Importable from anywhere.
 */
import type { z } from 'zod';

/** `member: expectation; …` for the first five issues, then how many more; `root` names an issue of the whole input. */
export function describeIssues(error: z.ZodError, root: string): string {
  const parts = error.issues.slice(0, 5).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join('.') : root;
    if (issue.code === 'unrecognized_keys') return `${where}: unknown member(s) ${issue.keys.join(', ')}`;
    return `${where}: ${issue.message}`;
  });
  const more = error.issues.length > 5 ? ` (and ${error.issues.length - 5} more)` : '';
  return `${parts.join('; ')}${more}`;
}
