/**
 * What the embedding actor reads to decide and to bill: the passages of
 * stored mail a generation has no vector for yet, of each message its first
 * `Embeddings:PassagesPerMessage` (its queue, read in message-id order from
 * a cursor), the forecast of an activation, the
 * coverage of a generation over the whole store, and the spend ledger
 * (migration 0008).
 *
 * The text sent for a passage is the passage itself; the first passage of a
 * message is prefixed with the subject and a newline, since the subject is
 * often the best summary of what the mail is about (bench/scenarios/retrieval.ts
 * embeds the same). Each text is cut to the provider's input bound, and the
 * characters counted are those of the cut text, in Unicode code points
 * (`characterCount`), as SQLite's `length()` counts them for the forecast.
 *
 * Writer of `embedding_spend`: the embedding actor. Importable by the
 * embedding actor only.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type PassageToEmbed = { passageId: number; messageId: number; text: string };

/** A passage within the bound the generation has no vector for. `?1`: the generation; `?2`: passages per message (`ALL_PASSAGES` for every one). */
const unembedded = 'p.ordinal < ?2 AND NOT EXISTS (SELECT 1 FROM passage_vectors v WHERE v.passage_id = p.id AND v.generation_id = ?1)';
const embeddable = "m.state = 'stored' AND m.parse_version IS NOT NULL";
const textOf = `CASE WHEN p.ordinal = 0 AND d.subject <> '' THEN d.subject || char(10) || p.text ELSE p.text END`;
/** Bound for "every passage": above any ordinal a parse makes. */
const ALL_PASSAGES = 2 ** 31;

const statements = perConnection((db: Database) => ({
  messages: db.prepare(
    `SELECT m.id FROM messages m WHERE m.id > ?3 AND ${embeddable}
       AND EXISTS (SELECT 1 FROM passages p WHERE p.message_id = m.id AND ${unembedded})
     ORDER BY m.id LIMIT ?4`,
  ),
  passages: db.prepare(
    `SELECT p.id AS passageId, p.message_id AS messageId, ${textOf} AS text
     FROM passages p LEFT JOIN search_documents d ON d.message_id = p.message_id
     WHERE p.message_id IN (SELECT value FROM json_each(?3)) AND ${unembedded}
     ORDER BY p.message_id, p.ordinal`,
  ),
  forecastAll: db.prepare(
    `SELECT count(*) AS passages, coalesce(sum(min(length(${textOf}), ?3)), 0) AS characters
     FROM messages m JOIN passages p ON p.message_id = m.id LEFT JOIN search_documents d ON d.message_id = m.id
     WHERE ${embeddable} AND p.ordinal < ?2`,
  ),
  forecastMissing: db.prepare(
    `SELECT count(*) AS passages, coalesce(sum(min(length(${textOf}), ?3)), 0) AS characters
     FROM messages m JOIN passages p ON p.message_id = m.id LEFT JOIN search_documents d ON d.message_id = m.id
     WHERE ${embeddable} AND ${unembedded}`,
  ),
  embedded: db.prepare('SELECT count(DISTINCT message_id) AS n FROM passage_vectors WHERE generation_id = ?'),
  embeddableCount: db.prepare(`SELECT count(*) AS n FROM messages m WHERE ${embeddable} AND EXISTS (SELECT 1 FROM passages p WHERE p.message_id = m.id)`),
  lastMessage: db.prepare('SELECT max(id) AS id FROM messages'),
  spent: db.prepare('SELECT characters FROM embedding_spend WHERE period_start = ?'),
  spend: db.prepare(
    `INSERT INTO embedding_spend (period_start, characters) SELECT ?1, ?2 WHERE ?2 <= ?3
     ON CONFLICT (period_start) DO UPDATE SET characters = characters + excluded.characters WHERE characters + excluded.characters <= ?3`,
  ),
}));

/**
 * The passages without a vector in the generation of at most `maxMessages`
 * messages after `afterMessageId`, each text cut to `maxCharacters`; of each
 * message only its first `passagesPerMessage` passages (null: all).
 * `lastMessageId` is where the next segment starts; null when none was found
 * (the sweep reached the end).
 */
export function unembeddedSegment(
  db: Database,
  generationId: number,
  options: { afterMessageId: number; maxMessages: number; maxCharacters: number; passagesPerMessage: number | null },
): { passages: PassageToEmbed[]; lastMessageId: number | null } {
  const s = statements(db);
  const perMessage = options.passagesPerMessage ?? ALL_PASSAGES;
  const ids = many<{ id: number }>(s.messages, [generationId, perMessage, options.afterMessageId, options.maxMessages]).map((row) => row.id);
  if (ids.length === 0) return { passages: [], lastMessageId: null };
  const passages = many<PassageToEmbed>(s.passages, [generationId, perMessage, JSON.stringify(ids)]).map((p) => ({
    ...p,
    text: p.text.length > options.maxCharacters ? p.text.slice(0, options.maxCharacters) : p.text,
  }));
  return { passages, lastMessageId: ids[ids.length - 1]! };
}

/**
 * What embedding the generation's missing passages would send (all stored
 * mail's when `generationId` is null), counting each message's first
 * `passagesPerMessage` passages (null: all).
 */
export function embeddingForecast(
  db: Database,
  generationId: number | null,
  options: { maxCharacters: number; passagesPerMessage: number | null },
): { passages: number; characters: number } {
  const s = statements(db);
  const args = [generationId, options.passagesPerMessage ?? ALL_PASSAGES, options.maxCharacters];
  const row = one<{ passages: number; characters: number }>(generationId === null ? s.forecastAll : s.forecastMissing, args);
  return { passages: row?.passages ?? 0, characters: row?.characters ?? 0 };
}

/** Of all stored mail that has passages, how many messages the generation has a vector for. */
export function storeCoverage(db: Database, generationId: number): { embedded: number; embeddable: number } {
  const s = statements(db);
  return { embedded: one<{ n: number }>(s.embedded, [generationId])?.n ?? 0, embeddable: one<{ n: number }>(s.embeddableCount)?.n ?? 0 };
}

/** The highest message id the store has given (0: none): mail arriving later has a higher one. */
export function lastMessageId(db: Database): number {
  return one<{ id: number | null }>(statements(db).lastMessage)?.id ?? 0;
}

/** Characters as the spend counts them (runtime/characters.ts). */
export { characterCount } from '../../characters.ts';

/** The first instant of the period holding `now`: periods are aligned to the epoch. */
export function periodStart(now: number, periodMs: number): number {
  return Math.floor(now / periodMs) * periodMs;
}

/** Characters spent in the period that starts at `start`. */
export function spentIn(db: Database, start: number): number {
  return one<{ characters: number }>(statements(db).spent, [start])?.characters ?? 0;
}

/**
 * Adds `characters` to the period's spend if the total stays within `max`;
 * false (nothing added) when it would not. Durable once it returns: the
 * caller spends before it sends.
 */
export function trySpend(db: Database, start: number, characters: number, max: number): boolean {
  if (!Number.isSafeInteger(characters) || characters < 0) throw new RangeError('characters: a whole number of 0 or more');
  return run(statements(db).spend, [start, characters, max]).changes === 1;
}
