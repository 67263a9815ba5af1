/**
 * Every tool of the MCP surface, in the order `tools/list` publishes them;
 * the listener narrows the list to the deployment's categories and the
 * caller's grant. A change here or in a tool's definition changes
 * `test/http/mcp/tools.golden.json` (and docs/mcp-tools.md, `npm run
 * docs:mcp`), which is how a change to the published surface stays
 * deliberate. What a tool is: tool.ts; each category's tools:
 * tools/<category>.ts.
 */
import type { Tool } from './tool.ts';
import { answeringTools } from './tools/answering.ts';
import { contactsTools } from './tools/contacts.ts';
import { draftsTools } from './tools/drafts.ts';
import { flagsTools } from './tools/flags.ts';
import { mailboxTools } from './tools/mailbox.ts';
import { sendingTools } from './tools/sending.ts';

export const allTools: readonly Tool[] = [...mailboxTools, ...answeringTools, ...flagsTools, ...sendingTools, ...draftsTools, ...contactsTools];
