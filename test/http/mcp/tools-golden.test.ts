/**
 * The published tool list is locked: names, descriptions, annotations and
 * input schemas as `tools/list` sends them. A change to any of them fails
 * here until the golden file is rewritten on purpose
 * (`MAILCAIRN_UPDATE_GOLDEN=1 npx tap test/http/mcp/tools-golden.test.ts`),
 * and docs/mcp-tools.md carries the same schemas (`npm run docs:mcp`).
 *
 * Re-recording never passes: a run that rewrites the file fails, saying so,
 * because comparing with what it just wrote would prove nothing. Review the
 * diff, commit it, and run again without the variable (CI never sets it).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { publishedTool } from '../../../http/mcp/mcp-server.ts';
import { withCurrentSchemas } from '../../../http/mcp/tools-doc.ts';
import { allTools } from '../../../http/mcp/tools.ts';

const golden = new URL('./tools.golden.json', import.meta.url);

t.test('tools/list matches the golden file', async (t) => {
  const current = `${JSON.stringify(allTools.map(publishedTool), null, 2)}\n`;
  const recorded = existsSync(golden) ? readFileSync(golden, 'utf8') : null;
  if (process.env.MAILCAIRN_UPDATE_GOLDEN === '1' && current !== recorded) {
    writeFileSync(golden, current);
    t.fail('tools.golden.json re-recorded: review the diff, commit it, and run again without MAILCAIRN_UPDATE_GOLDEN');
    return;
  }
  t.equal(current, recorded, 'a change to the published tools is deliberate: rewrite the golden file');
});

t.test('docs/mcp-tools.md carries the current schemas', async (t) => {
  const doc = readFileSync(new URL('../../../docs/mcp-tools.md', import.meta.url), 'utf8');
  t.equal(doc, withCurrentSchemas(doc), 'npm run docs:mcp');
});

t.test('every read tool carries the spec annotations and permission', async (t) => {
  for (const tool of allTools.filter((x) => x.category === 'mailbox')) {
    t.equal(tool.permission, 'service.mail.read', tool.name);
    t.match(tool.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }, tool.name);
  }
});

t.test('set_mail_flags carries the spec annotations and permission', async (t) => {
  const tool = allTools.find((x) => x.name === 'set_mail_flags');
  t.equal(tool?.permission, 'service.mail.flags.write');
  t.equal(tool?.category, 'flags');
  t.match(tool?.annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true });
});
