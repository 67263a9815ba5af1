/** `npm run docs:mcp`: rewrite the generated part of docs/mcp-tools.md from the tool table. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { withCurrentSchemas } from './tools-doc.ts';

const file = new URL('../../docs/mcp-tools.md', import.meta.url);
writeFileSync(file, withCurrentSchemas(existsSync(file) ? readFileSync(file, 'utf8') : '# MCP tools\n'));
