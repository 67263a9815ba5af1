/**
 * Every file of the shared corpus (real and torture, mbox files whole and cut
 * into messages) parses without throwing, the reply validates against
 * ParseReply, and the documented bounds hold. Only header-less files are
 * unreadable.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { ParseReply } from '../../../actors/mime-parse/protocol.ts';
import { corpusAvailable, corpusDir, loadCorpus, readManifest } from '../../harness/corpus.ts';

// The documented bounds (docs/parsing.md "Bounds"), pinned rather than read from the implementation's constants.
const MAX_BODY_CHARS = 1_000_000;
const MAX_PASSAGES = 64;
const MAX_PASSAGE_CHARS = 2_000;

/** The corpus files that carry no header field at all: serialized objects, bare bodies, fragments. */
const HEADERLESS = [
  'mime-torture/enmime/mail__erroneous.eml',
  'mime-torture/horde-mime/bug12842_b.eml',
  'mime-torture/horde-mime/flowed_msg.eml',
  'mime-torture/horde-mime/mime_part_v1.eml',
  'mime-torture/horde-mime/uudecode.eml',
  'mime-torture/mime4j/malformedHeader-noheader.eml',
];

t.test(
  'every corpus file and mbox message parses into a valid reply within the bounds',
  { skip: !corpusAvailable() && 'the shared corpus is not present' },
  async (t) => {
    const inputs = [
      ...readManifest().map((row) => ({ name: row.path!, raw: readFileSync(join(corpusDir(), row.path!)) })),
      ...loadCorpus('all').filter((m) => m.name.includes('#')),
    ];
    t.ok(inputs.length > 5_000, `${inputs.length} inputs`);
    const unreadable: string[] = [];
    const failures: string[] = [];
    for (const { name, raw } of inputs) {
      let reply: ParseReply;
      try {
        reply = parseMessage(raw, 'corpus');
      } catch (err) {
        failures.push(`${name}: threw ${String(err)}`);
        continue;
      }
      if (!ParseReply.safeParse(reply).success) failures.push(`${name}: reply failed ParseReply`);
      if (!reply.ok) {
        if (reply.reason !== 'no-header') failures.push(`${name}: unreadable as ${reply.reason} ${reply.errorClass ?? ''}`);
        unreadable.push(name);
        continue;
      }
      const m = reply.message;
      if (m.threadId.length !== 22 || !/^[A-Za-z0-9_-]+$/.test(m.threadId)) failures.push(`${name}: threadId ${m.threadId}`);
      if (m.bodyText.length > MAX_BODY_CHARS) failures.push(`${name}: body of ${m.bodyText.length}`);
      if (m.passages.length > MAX_PASSAGES || m.passages.some((p) => p.length > MAX_PASSAGE_CHARS || p.trim() === ''))
        failures.push(`${name}: passages out of bounds`);
      if (m.attachments.some((a) => !/^[0-9a-f]{64}$/.test(a.sha256) || !/^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(a.contentType)))
        failures.push(`${name}: attachment fields`);
      for (const id of [m.messageId, m.inReplyTo, ...m.references]) if (id !== null && !/^<[^<>\s]+>$/.test(id)) failures.push(`${name}: id ${id}`);
    }
    t.same(failures, [], 'no failures');
    t.same(unreadable.sort(), HEADERLESS, 'only header-less files are unreadable');
  },
);

t.test('an empty or blank input is unreadable, never a crash', async (t) => {
  t.same(parseMessage(new Uint8Array(0), 'a'), { ok: false, unreadable: true, reason: 'empty' });
  for (const raw of [Buffer.from('\r\n\r\n'), Buffer.from('just words, no header\n'), new Uint8Array(4096)]) {
    t.same(parseMessage(raw, 'a'), { ok: false, unreadable: true, reason: 'no-header' });
  }
});
