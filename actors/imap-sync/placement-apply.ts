/**
 * Applies one placement of the journal (runtime/store/mailbox/placements.ts)
 * over the account's writing session and says how it ended; the caller
 * (change-journal.ts) writes the ending. Like change-apply.ts, every path
 * decides from what the server holds in this attempt, so an attempt cut at
 * any point is attempted again and places the message once.
 *
 * `append`:
 * 1. the target folder: the folder the account maps under the alias `sent`
 *    (or `drafts`), else the one the server marks `\Sent` (`\Drafts`) in
 *    LIST (SPECIAL-USE), mirrored or not; none → `no-folder`, ended, not
 *    retried;
 * 2. its UIDVALIDITY and UIDNEXT (STATUS), made durable in the job's
 *    progress before APPEND;
 * 3. APPEND with the flags asked; the UID from APPENDUID (UIDPLUS), else
 *    found by its Message-ID among the UIDs from the recorded UIDNEXT
 *    (`UID SEARCH UID n:* HEADER Message-ID <id>`, each hit's envelope
 *    compared exactly).
 * An attempt that finds a mark from an earlier one searches first, the
 * same way, and adopts the copy it finds: an APPEND whose answer was lost
 * is not repeated. Under a new UIDVALIDITY the whole folder is searched.
 * The message is read from its row when applied; a row that is gone, or
 * that holds another Message-ID than the one asked, ends `no-source`.
 *
 * `remove-appended`: the copy the append recorded (or, when its UID was
 * never known or the append was dead-lettered after an attempt, the copy
 * found by Message-ID from its mark) is removed by UID alone, as `delete`
 * does (change-apply.ts `expungeOne`; refused without UIDPLUS). An append
 * that placed nothing (ended otherwise, or dead-lettered before any
 * APPEND), a copy no longer there, or a new UIDVALIDITY → `gone`.
 *
 * Changes apply one at a time in the order recorded, so the append a
 * removal names has ended (done, dead or dropped) before the removal runs.
 */
import type { ImapFlow } from 'imapflow';
import type { Job } from '../../runtime/store/jobs.ts';
import type {
  AppendEffect,
  AppendMark,
  AppendPayload,
  Placed,
  PlacementEnd,
  PlacementPayload,
  PlacementProgress,
  RemovalEffect,
} from '../../runtime/store/mailbox/placements.ts';
import { answeredNo, expungeOne, type RefusalReason } from './change-apply.ts';
import { resolveAliases } from './folder-aliases.ts';

export type PlacementResult = { kind: 'ended'; end: Omit<PlacementEnd, 'now'> } | { kind: 'refused'; reason: RefusalReason };

export type PlacementDeps = {
  client: ImapFlow;
  payload: PlacementPayload;
  /** The progress recorded by an earlier attempt, if any. */
  progress: unknown;
  /** Makes progress durable before a command whose effect must be found again. */
  recordProgress(progress: Readonly<Record<string, unknown>>): void;
  /** The account's configured folders (alias, optional path). */
  folders: ReadonlyArray<{ alias: string; path: string | null }>;
  /** The stored message as its row holds it now; null when gone. */
  source(source: AppendEffect['source']): { messageIdHeader: string; raw: Uint8Array } | null;
  /** The append job a removal names (this account's), or null. */
  appendJob(jobId: number): { job: Job; payload: AppendPayload } | null;
  /** Whether a removal of this append has already ended. */
  removalEnded(): boolean;
};

export async function applyPlacement(deps: PlacementDeps): Promise<PlacementResult> {
  const effect = deps.payload.effect;
  return effect.kind === 'append' ? append(deps, effect) : removeAppended(deps, effect);
}

async function append(deps: PlacementDeps, effect: AppendEffect): Promise<PlacementResult> {
  const { client } = deps;
  // An operator retried this append after a removal of it ended: placing it now would leave a copy nobody removes.
  if (deps.removalEnded()) return ended('withdrawn', null);
  const earlier = markOf(deps.progress);
  if (earlier !== null) {
    // An earlier attempt may have placed it before it could record so: adopt that copy rather than append another.
    const found = await findByMessageId(client, earlier, effect.messageIdHeader);
    if (found !== null) return ended('applied', found);
  }
  const source = deps.source(effect.source);
  if (source === null || source.messageIdHeader !== effect.messageIdHeader) return ended('no-source', null);
  const path = await targetFolder(client, deps.folders, effect.target);
  if (path === null) return ended('no-folder', null);
  const status = await client.status(path, { uidNext: true, uidValidity: true }).catch((err: unknown) => {
    if (answeredNo(err)) return false as const;
    throw err;
  });
  if (status === false || status.uidNext === undefined || status.uidValidity === undefined) return refused('no-target');
  const mark: AppendMark = { path, uidValidity: Number(status.uidValidity), uidNext: status.uidNext };
  deps.recordProgress({ placement: mark });
  let answer: Awaited<ReturnType<ImapFlow['append']>>;
  try {
    answer = await client.append(path, Buffer.from(source.raw.buffer, source.raw.byteOffset, source.raw.byteLength), [...effect.flags]);
  } catch (err) {
    // Refused: nothing was placed. Anything else (the wire) is the caller's, which retries; the mark finds a copy that landed.
    if ((err as { serverResponseCode?: unknown }).serverResponseCode === 'APPENDLIMIT') return refused('too-large');
    if (answeredNo(err)) return refused('no-target');
    throw err;
  }
  if (answer === false || answer === undefined) throw new Error('APPEND was not sent: the session is not authenticated');
  // APPENDUID (UIDPLUS) names the copy; a UID imapflow guessed from a sequence number comes without UIDVALIDITY and is not taken.
  if (answer.uid !== undefined && answer.uidValidity !== undefined) return ended('applied', { path, uidValidity: Number(answer.uidValidity), uid: answer.uid });
  return ended('applied', await findByMessageId(client, mark, effect.messageIdHeader));
}

async function removeAppended(deps: PlacementDeps, effect: RemovalEffect): Promise<PlacementResult> {
  const { client } = deps;
  const append = deps.appendJob(effect.appendJob);
  if (append === null) return ended('gone', null);
  const { job } = append;
  // Recorded before this removal, so applied before it: still outstanding would be a defect.
  if (job.state === 'queued' || job.state === 'running') throw new Error(`append j${job.id} has not ended`);
  const progress = (job.progress ?? {}) as PlacementProgress;
  if (job.state === 'done' && progress.outcome !== 'applied') return ended('gone', null);
  let target: Placed | null = job.state === 'done' ? (progress.placed ?? null) : null;
  // Placed without a known UID, or dead-lettered after an APPEND whose answer was lost: look for it the way the append would.
  if (target === null && progress.placement !== undefined) target = await findByMessageId(client, progress.placement, append.payload.effect.messageIdHeader);
  if (target === null) return ended('gone', null);
  const removed = await expungeOne(client, target, deps);
  if (removed === 'applied') return ended('applied', target);
  return removed === 'gone' ? ended('gone', null) : refused(removed);
}

/** The folder an append goes to: the mapped alias (its path, or SPECIAL-USE when it has none), else SPECIAL-USE; null when none. */
async function targetFolder(client: ImapFlow, folders: PlacementDeps['folders'], target: AppendEffect['target']): Promise<string | null> {
  const listed = await client.list();
  const remote = listed.map((f) => ({ path: f.path, specialUse: f.specialUse ?? null, flags: [...(f.flags ?? [])] }));
  const mapped = folders.find((f) => f.alias.toLowerCase() === target);
  const [resolution] = resolveAliases([{ alias: target, path: mapped?.path ?? null }], remote);
  return resolution?.outcome === 'ok' ? resolution.path : null;
}

/**
 * The copy of the message with this Message-ID placed in the marked folder
 * since the mark (UIDs from the recorded UIDNEXT; every UID when the folder
 * was renumbered since), or null. Leaves that folder selected read-only.
 */
async function findByMessageId(client: ImapFlow, mark: AppendMark, messageIdHeader: string): Promise<Placed | null> {
  let box: Awaited<ReturnType<ImapFlow['mailboxOpen']>>;
  try {
    box = await client.mailboxOpen(mark.path, { readOnly: true });
  } catch (err) {
    if (answeredNo(err)) return null; // the folder is no longer there
    throw err;
  }
  if (box.exists === 0) return null;
  const uidValidity = Number(box.uidValidity);
  const from = uidValidity === mark.uidValidity ? mark.uidNext : 1;
  const hits = await client.search({ uid: `${from}:*`, header: { 'message-id': messageIdHeader } }, { uid: true });
  // `n:*` also names the highest UID when it is below n; SEARCH HEADER matches substrings: compare exactly.
  for (const uid of (hits || []).filter((u) => u >= from).sort((a, b) => a - b)) {
    const msg = await client.fetchOne(String(uid), { uid: true, envelope: true }, { uid: true });
    if (msg !== false && msg.uid === uid && sameMessageId(msg.envelope?.messageId, messageIdHeader)) return { path: mark.path, uidValidity, uid };
  }
  return null;
}

function sameMessageId(found: string | undefined, wanted: string): boolean {
  const bare = (id: string): string => id.trim().replace(/^<|>$/g, '');
  return found !== undefined && bare(found) === bare(wanted);
}

function markOf(progress: unknown): AppendMark | null {
  const mark = (progress as PlacementProgress | null)?.placement;
  return mark && typeof mark.uidNext === 'number' && typeof mark.path === 'string' ? mark : null;
}

function ended(outcome: PlacementEnd['outcome'], placed: Placed | null): PlacementResult {
  return { kind: 'ended', end: { outcome, placed } };
}

function refused(reason: RefusalReason): PlacementResult {
  return { kind: 'refused', reason };
}
