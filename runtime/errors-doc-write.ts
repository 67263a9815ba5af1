/** `npm run docs:errors`: rewrite the table of docs/errors.md from the error table. */
import { readFileSync, writeFileSync } from 'node:fs';
import { withCurrentTable } from './errors-doc.ts';

const file = new URL('../docs/errors.md', import.meta.url);
writeFileSync(file, withCurrentTable(readFileSync(file, 'utf8')));
