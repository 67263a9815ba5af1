/**
 * The MIME parse pool task (`mime-parse`): a raw message (or a chunk of
 * them) in, `ParseReply` (or one per message) out. Stateless and synchronous; created as a piscina
 * pool by service/app.ts through runtime/pool/pool.ts.
 *
 * Privacy: nothing here logs, and parseMessage never throws, so no content
 * can reach the pool's own failure log either.
 */
import { definePoolTask } from '../../runtime/pool/task.ts';
import { parseMessage } from './parse-message.ts';
import { ParseMessage } from './protocol.ts';

export default definePoolTask({
  name: 'mime-parse',
  messages: ParseMessage,
  handle: (msg) => (msg.type === 'mime-parse.parse' ? parseMessage(msg.raw, msg.account) : msg.raws.map((raw) => parseMessage(raw, msg.account))),
});
