/** `npm run docs:metrics`: rewrite the metric table of docs/operations.md from the catalogue. */
import { readFileSync, writeFileSync } from 'node:fs';
import { withCurrentMetricTable } from './metrics-doc.ts';

const file = new URL('../../docs/operations.md', import.meta.url);
writeFileSync(file, withCurrentMetricTable(readFileSync(file, 'utf8')));
