/**
 * The MIME parse pool task (`mime-parse`): a raw message (or a chunk of
 * them) in, `ParseReply` (or one per message) out; or one attachment of a
 * raw message decoded for a download (`ExtractAttachmentReply`, its bytes
 * moved back rather than copied). Stateless and synchronous; created as a
 * piscina pool by service/app.ts through runtime/pool/pool.ts.
 *
 * Privacy: nothing here logs, and neither parseMessage nor extractAttachment
 * throws, so no content can reach the pool's own failure log either.
 */
import { transfer, type WithTransfer } from '../../runtime/actor.ts';
import { definePoolTask } from '../../runtime/pool/task.ts';
import { extractAttachment } from './attachment-content.ts';
import { parseMessage } from './parse-message.ts';
import { type ExtractAttachmentReply, type ExtractAttachmentRequest, ParseMessage } from './protocol.ts';

export default definePoolTask({
  name: 'mime-parse',
  messages: ParseMessage,
  handle: (msg) => {
    switch (msg.type) {
      case 'mime-parse.parse':
        return parseMessage(msg.raw, msg.account);
      case 'mime-parse.parse-batch':
        return msg.raws.map((raw) => parseMessage(raw, msg.account));
      case 'mime-parse.extract-attachment':
        return answerExtract(msg);
    }
  },
});

/** The decoded attachment, its bytes moved to the asking thread instead of copied. */
export function answerExtract(msg: ExtractAttachmentRequest): ExtractAttachmentReply | WithTransfer<ExtractAttachmentReply> {
  const found = extractAttachment(msg.raw, msg.index);
  if (found === null) return null;
  // extractAttachment's content owns its whole ArrayBuffer, so moving it detaches nothing else.
  return transfer<ExtractAttachmentReply>(found, [found.content.buffer as ArrayBuffer]);
}
