/**
 * `get_email_content`: up to ten emails by storedEmailId, or one thread, read
 * from the local copy only (it never fetches).
 *
 * Per email, inside an otherwise successful answer:
 * - an id that names no visible email of the caller's scope (unknown,
 *   tombstoned, another owner's, a folder no longer mirrored) is an entry
 *   with error 53001 — the same for all of those;
 * - content missing or damaged locally is an entry with error 55001, and a
 *   repair (`missing` or `damaged`) in `repairs` for the caller to have the
 *   sync actor record: the raw MIME row is gone (`missing`), its SHA-256 no
 *   longer matches (`damaged`), or a `stored` email has no search document
 *   (`missing`: the body agents read is derived there at sync);
 * - mail whose content is not held by design (oversized, unreadable) is an
 *   entry without `body`, with `contentState` saying why.
 * A malformed id never gets this far: the input schema refuses it (51001).
 *
 * Body: `search_documents.body_text`, the readable text extracted at sync,
 * from `bodyOffset` for at most `bodyCharacterBudget` characters (UTF-16
 * code units, as JavaScript counts; a cut never splits a surrogate pair and
 * backs off to a word boundary when one is near). A cut body says
 * `truncatedBy: 'characterBudget'` and `nextBodyOffset`; the pieces read in
 * turn join to exactly the full text.
 *
 * Thread: every visible email with that thread id, one per Message-ID (a
 * message filed in several folders is shown once, the copy stored first),
 * oldest first by received time. Beyond ten, the newest ten are returned —
 * a conversation is read for where it stands — and `threadMessageCount`
 * says how many there are. A thread with nothing visible is E_NOT_FOUND
 * for the whole call.
 *
 * Reads only. Importable by `task.ts`.
 */
import { createHash } from 'node:crypto';
import { AppError, Codes } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { many, one } from '../../runtime/store/rows.ts';
import {
  MAX_CONTENT_EMAILS,
  type EmailBody,
  type EmailContent,
  type EmailContentError,
  type GetContentReply,
  type GetContentRequest,
  type RepairNeeded,
} from './protocol/mail-reads.ts';
import { bytesOf, placeholders, prepared } from './statements.ts';
import { decodeStoredEmailId, encodeStoredEmailId } from './protocol/stored-email-id.ts';
import { addressesOf, summaryColumns, summaryOf, type StoredAttachment, type SummaryRow } from './summary.ts';
import { resolveTargets, visibleBindings, type Target } from './targets.ts';

type ContentRow = SummaryRow & { cc_json: string | null; header_message_id: string | null; in_reply_to: string | null; references_json: string | null };
type ThreadRow = { id: number; header_message_id: string | null; internal_date: number | null };

const messageSql = `SELECT ${summaryColumns}, m.cc_json, m.header_message_id, m.in_reply_to, m.references_json
  FROM messages m WHERE m.id = ? AND m.state IN ('stored', 'oversized', 'unreadable') AND (m.state <> 'stored' OR m.parse_version IS NOT NULL)`;
const rawSql = 'SELECT mime, sha256 FROM message_raw WHERE message_id = ?';
const bodySql = 'SELECT body_text FROM search_documents WHERE message_id = ?';

export function getContent(db: Database, request: GetContentRequest): GetContentReply {
  const { input, scope, bodyCharacterBudget } = request;
  const bindings = visibleBindings(resolveTargets(db, scope));
  const repairs: RepairNeeded[] = [];
  const read = (id: number, storedEmailId: string) =>
    entry(db, id, storedEmailId, bindings, { offset: input.bodyOffset ?? 0, budget: bodyCharacterBudget }, repairs);

  if (input.threadId !== undefined) {
    const members = threadMembers(db, input.threadId, [...bindings.keys()]);
    if (members.length === 0) throw new AppError('E_NOT_FOUND');
    const shown = members.slice(-MAX_CONTENT_EMAILS);
    return { emails: shown.map((id) => read(id, encodeStoredEmailId(id))), threadMessageCount: members.length, repairs };
  }
  const emails = (input.storedEmailIds ?? []).map((storedEmailId) => {
    const id = decodeStoredEmailId(storedEmailId);
    // The schema admits only well-formed ids; a caller that skipped it gets the
    // same answer as for an id that names nothing.
    return id === null ? failure(storedEmailId, 'E_NOT_FOUND') : read(id, storedEmailId);
  });
  return { emails, repairs };
}

function entry(
  db: Database,
  id: number,
  storedEmailId: string,
  bindings: Map<number, Target>,
  body: { offset: number; budget: number },
  repairs: RepairNeeded[],
): EmailContent | EmailContentError {
  const row = one<ContentRow>(prepared(db, messageSql), [id]);
  const target = row === undefined ? undefined : bindings.get(row.binding_id);
  if (row === undefined || target === undefined) return failure(storedEmailId, 'E_NOT_FOUND');
  const damaged = (reason: RepairNeeded['reason']) => {
    repairs.push({ messageId: row.id, accountId: row.account_id, reason });
    return failure(storedEmailId, 'E_CONTENT_DAMAGED');
  };

  let text: string | null = null;
  if (row.state !== 'oversized') {
    const raw = one<{ mime: Uint8Array | ArrayBuffer; sha256: Uint8Array | ArrayBuffer }>(prepared(db, rawSql), [row.id]);
    if (raw === undefined) return damaged('missing');
    const sha256 = bytesOf(raw.sha256)!;
    if (!Buffer.from(sha256).equals(createHash('sha256').update(bytesOf(raw.mime)!).digest())) return damaged('damaged');
    if (row.state === 'stored') {
      const document = one<{ body_text: string }>(prepared(db, bodySql), [row.id]);
      if (document === undefined) return damaged('missing');
      text = document.body_text;
    }
  }

  const summary = summaryOf(row, target.alias, Number.POSITIVE_INFINITY);
  const cc = addressesOf(row.cc_json).map((a) => a.address);
  const references = row.references_json === null ? [] : (JSON.parse(row.references_json) as string[]);
  const attachments = row.attachments_json === null ? [] : (JSON.parse(row.attachments_json) as StoredAttachment[]);
  return {
    ...summary,
    ...(cc.length > 0 ? { ccAddresses: cc } : {}),
    ...(row.header_message_id !== null ? { messageId: row.header_message_id } : {}),
    ...(row.in_reply_to !== null ? { inReplyTo: row.in_reply_to } : {}),
    ...(references.length > 0 ? { references } : {}),
    ...(text !== null ? { body: cutBody(text, body.offset, body.budget) } : {}),
    ...(attachments.length > 0
      ? {
          attachments: attachments.map((a, index) => ({
            index,
            ...(a.filename !== null && a.filename !== '' ? { filename: a.filename } : {}),
            contentType: a.contentType,
            sizeBytes: a.size,
            inline: a.inline,
          })),
        }
      : {}),
  };
}

function failure(storedEmailId: string, code: 'E_NOT_FOUND' | 'E_CONTENT_DAMAGED'): EmailContentError {
  return { storedEmailId, error: { code: Codes[code].public, message: Codes[code].msg } };
}

/** How far back from the budget's edge a cut looks for whitespace, at most. */
const WORD_BACKOFF = 200;

export function cutBody(full: string, offset: number, budget: number): EmailBody {
  const start = Math.min(offset, full.length);
  let end = start + budget;
  if (end >= full.length) return { text: full.slice(start), totalCharacters: full.length };
  if (isHighSurrogate(full.charCodeAt(end - 1))) end -= 1;
  if (end <= start)
    end = start + 2; // a budget of one character and a pair: send the pair
  else if (!/\s/u.test(full[end]!) && !/\s/u.test(full[end - 1]!)) {
    const window = Math.min(WORD_BACKOFF, Math.floor(budget / 4));
    for (let i = end - 1; i > end - window && i > start; i -= 1) {
      if (/\s/u.test(full[i]!)) {
        end = i + 1;
        break;
      }
    }
  }
  return { text: full.slice(start, end), totalCharacters: full.length, truncatedBy: 'characterBudget', nextBodyOffset: end };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Visible members of a thread, deduplicated by Message-ID, oldest first. */
function threadMembers(db: Database, threadId: string, bindingIds: number[]): number[] {
  if (bindingIds.length === 0) return [];
  const sql = `SELECT id, header_message_id, internal_date FROM messages
    WHERE thread_id = ? AND state IN ('stored', 'oversized', 'unreadable') AND binding_id IN (${placeholders(bindingIds.length)}) ORDER BY id`;
  const seen = new Set<string>();
  const members: ThreadRow[] = [];
  for (const row of many<ThreadRow>(prepared(db, sql), [threadId, ...bindingIds])) {
    if (row.header_message_id !== null) {
      if (seen.has(row.header_message_id)) continue;
      seen.add(row.header_message_id);
    }
    members.push(row);
  }
  // Undated mail first, as SQLite orders NULL.
  members.sort((a, b) =>
    a.internal_date === b.internal_date ? a.id - b.id : a.internal_date === null ? -1 : b.internal_date === null ? 1 : a.internal_date - b.internal_date,
  );
  return members.map((m) => m.id);
}
