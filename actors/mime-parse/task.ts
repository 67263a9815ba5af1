/**
 * The MIME parse pool task (`mime-parse`): a raw message in (moved, not
 * copied), `ParseReply` out. Stateless and synchronous; created as a piscina
 * pool by runtime/app.ts through runtime/pool/pool.ts.
 *
 * Privacy: nothing here logs, and parseMessage never throws, so no content
 * can reach the pool's own failure log either.
 */
import { definePoolTask } from '../../runtime/pool/task.ts';
import { parseMessage } from './parse-message.ts';
import { ParseRequest } from './protocol.ts';

export default definePoolTask({
  name: 'mime-parse',
  messages: ParseRequest,
  handle: (msg) => parseMessage(msg.raw, msg.account),
});
