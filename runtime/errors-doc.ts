/**
 * Renders the code table of docs/errors.md from runtime/errors.ts, so the
 * page cannot drift: `npm run docs:errors` rewrites it, and a test compares.
 */
import { Codes } from './errors.ts';

export const ERRORS_TABLE_HEADING = '| code | public | HTTP | retryable | meaning |';

export function renderErrorTable(): string {
  const rows = Object.entries(Codes).map(
    ([code, row]) => `| \`${code}\` | ${row.public ?? '—'} | ${row.status} | ${row.retryable ? 'yes' : 'no'} | ${row.msg} |`,
  );
  return `${[ERRORS_TABLE_HEADING, '|---|---|---|---|---|', ...rows].join('\n')}\n`;
}

/** The page with its table replaced by the current one. */
export function withCurrentTable(page: string): string {
  const at = page.indexOf(ERRORS_TABLE_HEADING);
  return (at < 0 ? `${page.trimEnd()}\n\n` : page.slice(0, at)) + renderErrorTable();
}
