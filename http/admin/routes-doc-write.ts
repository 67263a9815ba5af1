/** `npm run docs:admin`: rewrite the generated part of docs/admin-api.md from the route table. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { withCurrentRoutes } from './routes-doc.ts';

const file = new URL('../../docs/admin-api.md', import.meta.url);
writeFileSync(file, withCurrentRoutes(existsSync(file) ? readFileSync(file, 'utf8') : '# Administrative API\n'));
