/**
 * Applies one change of the journal over the account's writing session
 * and says how it ended; the caller (change-journal.ts) writes the ending.
 *
 * Every path decides from the server's state as read in this attempt
 * (a guarded STORE changes nothing the mirror did not know), so an
 * attempt interrupted at any point (a crash, a lost connection) is simply
 * attempted again and ends as recorded, once:
 * - flags and keywords: with CONDSTORE, `UID STORE … UNCHANGEDSINCE <the
 *   MODSEQ the mirror knew>` first, then the message is read (FLAGS
 *   MODSEQ): holding the requested state, the change is applied. Otherwise
 *   (or without CONDSTORE, where the read comes first) it decides from what
 *   the server holds: if someone changed the very part this change touches
 *   since it was recorded (MODSEQ past the recorded one, and the part
 *   differs from what the server held and from what the asker saw, the
 *   journal's earlier changes included) the server wins (`superseded`);
 *   else it stores again guarded by the MODSEQ just read, and reads again
 *   to observe;
 * - copy and relocate: the target's UIDNEXT and the message's size,
 *   internal date and Message-ID are made durable before COPY or MOVE, so
 *   a later attempt finds a copy an earlier one made instead of making a
 *   second; the new UID comes from COPYUID (UIDPLUS). A relocation without
 *   MOVE is COPY, `\Deleted`, `UID EXPUNGE`; a server with neither MOVE nor
 *   UIDPLUS is refused, for the reason below;
 * - delete: `\Deleted` then `UID EXPUNGE` of that UID only (UIDPLUS; a
 *   server without it is refused: a plain EXPUNGE would remove other
 *   messages marked deleted).
 *
 * A server that refuses (a read-only folder, a keyword it does not accept,
 * a target that does not exist) ends the change as `refused` at once: a
 * retry would meet the same answer. An IMAP failure is thrown to the caller,
 * which retries with backoff.
 */
import type { FetchMessageObject, ImapFlow } from 'imapflow';
import type { ChangeEnd, ChangePayload, ServerState } from '../../runtime/store/mailbox/changes.ts';
import { type ChangeEffect, isSatisfied, touchedPartChanged } from '../../runtime/store/mailbox/change-effect.ts';
import { splitFlags } from './server-flags.ts';

export type ApplyResult = { kind: 'ended'; end: Omit<ChangeEnd, 'now'> } | { kind: 'refused'; reason: RefusalReason };

/** Constant sentences: a dead letter's reason, never what the server wrote. */
export const REFUSALS = {
  'read-only': 'The folder is read-only on the server.',
  keyword: 'The folder does not accept new keywords.',
  'not-applied': 'The server did not apply the change.',
  'no-target': 'The server refused to place the message in the target folder.',
  'no-uidplus': 'The server cannot expunge one message alone (no UIDPLUS), so nothing was deleted.',
  'source-kept': 'The message was placed in the target folder, but the server did not remove it from the source folder.',
  'no-move': 'The server can neither move a message nor expunge one alone (no MOVE, no UIDPLUS), so nothing was moved.',
  'too-large': 'The server does not accept a message this large in the target folder (APPENDLIMIT).',
} as const;
export type RefusalReason = keyof typeof REFUSALS;

/** What a copy or move made durable before its command, to find its effect again after a crash. */
type Placement = { targetUidNext: number; targetUidValidity: number; size: number | null; internalDate: number | null; messageId: string | null };

export type ApplyDeps = {
  client: ImapFlow;
  payload: ChangePayload;
  /** The progress recorded by an earlier attempt, if any. */
  progress: unknown;
  /** Makes progress durable before a command whose effect must be found again. */
  recordProgress(progress: Readonly<Record<string, unknown>>): void;
};

/** Rounds of read → store → read before a server that keeps changing the message wins. */
const STORE_ROUNDS = 3;

export async function applyChange(deps: ApplyDeps): Promise<ApplyResult> {
  const effect = deps.payload.effect;
  switch (effect.kind) {
    case 'relocate':
    case 'copy':
      return place(deps, effect.kind, effect.targetPath);
    case 'delete':
      return remove(deps);
    default:
      return storeFlags(deps, effect);
  }
}

async function storeFlags(deps: ApplyDeps, effect: ChangeEffect): Promise<ApplyResult> {
  const { client, payload: p } = deps;
  const box = await select(client, p.sourcePath);
  if (box.readOnly) return refused('read-only');
  if (Number(box.uidValidity) !== p.uidValidity) return ended({ outcome: 'gone' });
  if ((effect.kind === 'add-keywords' || effect.kind === 'set-keywords') && !acceptsKeywords(box.permanentFlags, effect.keywords)) return refused('keyword');
  let current: ServerState | null;
  if (client.enabled.has('CONDSTORE') && p.baseModseq !== null) {
    // The common case in one round trip less: store over what the mirror knew, guarded by its MODSEQ.
    // The server refuses it (MODIFIED) if anything changed the message since; then read and decide.
    await store(client, p.uid, effect, { ...p.base, modseq: p.baseModseq });
    current = await readState(client, p.uid);
    if (current !== null && isSatisfied(current, effect)) return ended({ outcome: 'applied', server: current });
  } else {
    current = await readState(client, p.uid);
  }
  for (let round = 0; round < STORE_ROUNDS; round++) {
    if (current === null) return ended({ outcome: 'gone' });
    if (isSatisfied(current, effect)) return ended({ outcome: 'applied', server: current });
    if (serverChangedIt(p, current, effect)) return ended({ outcome: 'superseded', server: current });
    await store(client, p.uid, effect, current);
    const after = await readState(client, p.uid);
    if (after === null) return ended({ outcome: 'gone' });
    if (isSatisfied(after, effect)) return ended({ outcome: 'applied', server: after });
    // Unchanged: the server answered without applying it. Changed: someone wrote in between; decide again.
    if (after.modseq === null || after.modseq === current.modseq) return refused('not-applied');
    current = after;
  }
  return current === null ? ended({ outcome: 'gone' }) : ended({ outcome: 'superseded', server: current });
}

/** The folder selected read-write, reusing the selection the writing session already holds. */
export async function select(client: ImapFlow, path: string): Promise<{ readOnly?: boolean; uidValidity: bigint; permanentFlags?: Set<string> }> {
  const held = client.mailbox;
  if (held && held.path === path && !held.readOnly) return held;
  return client.mailboxOpen(path);
}

/**
 * `silent`: `.SILENT`, for a single change, which reads the state back itself (FETCH) and never uses the untagged
 * FETCH a STORE answers with; the server then leaves FLAGS out of it (with CONDSTORE it still sends the MODSEQ,
 * RFC 7162). A batch takes that answer as its read-back (change-batch.ts), so it is not silent.
 */
type StoreOptions = { uid: true; silent?: true; unchangedSince?: bigint };

/**
 * The STORE of a change every message takes the same way whatever it holds
 * (seen, flagged, keywords added), over one UID or a UID set (change-batch.ts);
 * false for a change whose STORE depends on the message's own flags.
 */
export async function storeUniform(client: ImapFlow, range: string, effect: ChangeEffect, options: StoreOptions): Promise<boolean> {
  switch (effect.kind) {
    case 'set-seen':
    case 'set-flagged': {
      const flag = effect.kind === 'set-seen' ? '\\Seen' : '\\Flagged';
      await (effect.value ? client.messageFlagsAdd(range, [flag], options) : client.messageFlagsRemove(range, [flag], options));
      return true;
    }
    case 'add-keywords':
      await client.messageFlagsAdd(range, [...effect.keywords], options);
      return true;
    default:
      return false;
  }
}

async function store(client: ImapFlow, uid: number, effect: ChangeEffect, current: ServerState): Promise<void> {
  const options: StoreOptions = { uid: true, silent: true, ...(current.modseq !== null ? { unchangedSince: BigInt(current.modseq) } : {}) };
  const range = String(uid);
  if (await storeUniform(client, range, effect, options)) return;
  switch (effect.kind) {
    case 'remove-keywords': {
      // The server's own spelling of each keyword too: keywords compare case-insensitively, a server may not.
      const folded = new Set(effect.keywords);
      const held = current.keywords.filter((k) => folded.has(k.toLowerCase()));
      await client.messageFlagsRemove(range, [...new Set([...effect.keywords, ...held])], options);
      return;
    }
    case 'set-keywords':
      await client.messageFlagsSet(range, [...current.flags, ...effect.keywords], options);
      return;
    default:
      throw new Error(`not a flag change: ${effect.kind}`);
  }
}

async function place(deps: ApplyDeps, kind: 'relocate' | 'copy', targetPath: string): Promise<ApplyResult> {
  const { client, payload: p } = deps;
  // Without MOVE, imapflow moves by COPY, \Deleted and EXPUNGE; without UIDPLUS that EXPUNGE is a plain one,
  // which removes every message marked deleted in the folder, not only this one.
  if (kind === 'relocate' && !client.capabilities.has('MOVE') && !client.capabilities.has('UIDPLUS')) return refused('no-move');
  const earlier = placementOf(deps.progress);
  const box = await client.mailboxOpen(p.sourcePath, { readOnly: kind === 'copy' });
  if (kind === 'relocate' && box.readOnly) return refused('read-only');
  if (Number(box.uidValidity) !== p.uidValidity) return ended({ outcome: 'gone' });
  let present = await readIdentity(client, p.uid);
  if (earlier !== null) {
    // An earlier attempt may have placed it before it could record so: find that copy rather than make another.
    const found = await findPlaced(client, targetPath, earlier);
    if (found !== null) return completePlacement(client, kind, p, { path: targetPath, uidValidity: earlier.targetUidValidity, uid: found });
    await client.mailboxOpen(p.sourcePath, { readOnly: kind === 'copy' });
    present = await readIdentity(client, p.uid);
  }
  if (present === null) return ended({ outcome: 'gone' });
  const status = await client.status(targetPath, { uidNext: true, uidValidity: true }).catch((err: unknown) => {
    // NO: the target does not exist (or may not be read); anything else is the wire's, for the caller.
    if (answeredNo(err)) return false as const;
    throw err;
  });
  if (status === false || status.uidNext === undefined || status.uidValidity === undefined) return refused('no-target');
  const placement: Placement = { targetUidNext: status.uidNext, targetUidValidity: Number(status.uidValidity), ...present };
  deps.recordProgress({ placement });
  const result =
    kind === 'copy' ? await client.messageCopy(String(p.uid), targetPath, { uid: true }) : await client.messageMove(String(p.uid), targetPath, { uid: true });
  if (result === false || result === undefined) {
    // Without MOVE, imapflow copies and then deletes: a failed deletion leaves the copy placed.
    const placed = kind === 'relocate' && !client.capabilities.has('MOVE') ? await findPlaced(client, targetPath, placement) : null;
    if (placed === null) return refused('no-target');
    return completePlacement(client, kind, p, { path: targetPath, uidValidity: placement.targetUidValidity, uid: placed });
  }
  let uid = result.uidMap?.get(p.uid) ?? null;
  const uidValidity = result.uidValidity !== undefined ? Number(result.uidValidity) : placement.targetUidValidity;
  // Without COPYUID (no UIDPLUS), look for it the way a later attempt would.
  if (uid === null) uid = await findPlaced(client, targetPath, placement);
  return ended({ outcome: 'applied', target: uid === null ? null : { path: targetPath, uidValidity, uid } });
}

/** A copy is in the target: a relocation then removes the source (that UID alone) and checks that it went. */
async function completePlacement(
  client: ImapFlow,
  kind: 'relocate' | 'copy',
  p: ChangePayload,
  target: { path: string; uidValidity: number; uid: number },
): Promise<ApplyResult> {
  if (kind === 'relocate') {
    await client.mailboxOpen(p.sourcePath);
    if ((await readIdentity(client, p.uid)) !== null) {
      await client.messageDelete(String(p.uid), { uid: true });
      // The copy stands; a retry finds it and tries the source again.
      if ((await readIdentity(client, p.uid)) !== null) return refused('source-kept');
    }
  }
  return ended({ outcome: 'applied', target });
}

async function remove(deps: ApplyDeps): Promise<ApplyResult> {
  const { payload: p } = deps;
  const removed = await expungeOne(deps.client, { path: p.sourcePath, uidValidity: p.uidValidity, uid: p.uid }, deps);
  return removed === 'applied' || removed === 'gone' ? ended({ outcome: removed }) : refused(removed);
}

/**
 * Removes one message by its UID alone: `\Deleted` then `UID EXPUNGE` of
 * that UID (UIDPLUS; without it, refused: a plain EXPUNGE would remove other
 * messages marked deleted). `began` is made durable before the STORE, so an
 * attempt that finds the message gone after an earlier one began says
 * `applied`, not `gone`. Shared by `delete` and `remove-appended`.
 */
export async function expungeOne(
  client: ImapFlow,
  target: { path: string; uidValidity: number; uid: number },
  progress: Pick<ApplyDeps, 'progress' | 'recordProgress'>,
): Promise<'applied' | 'gone' | RefusalReason> {
  if (!client.capabilities.has('UIDPLUS')) return 'no-uidplus';
  const box = await select(client, target.path);
  if (box.readOnly) return 'read-only';
  if (Number(box.uidValidity) !== target.uidValidity) return 'gone';
  const began = (progress.progress as { began?: boolean } | null)?.began === true;
  if ((await readIdentity(client, target.uid)) === null) return began ? 'applied' : 'gone';
  progress.recordProgress({ began: true });
  await client.messageDelete(String(target.uid), { uid: true });
  return (await readIdentity(client, target.uid)) === null ? 'applied' : 'not-applied';
}

/** The message's flags, keywords and MODSEQ on the server, or null when that UID is gone. */
async function readState(client: ImapFlow, uid: number): Promise<ServerState | null> {
  const condstore = client.enabled.has('CONDSTORE');
  const msg = await client.fetchOne(String(uid), { uid: true, flags: true, ...(condstore ? { modseq: true } : {}) }, { uid: true });
  if (msg === false || msg.uid !== uid) return null;
  return { ...splitFlags(msg.flags), modseq: msg.modseq !== undefined ? msg.modseq.toString() : null };
}

/** What tells the message's copy apart in the target folder: size, internal date, Message-ID. */
async function readIdentity(client: ImapFlow, uid: number): Promise<Pick<Placement, 'size' | 'internalDate' | 'messageId'> | null> {
  const msg = await client.fetchOne(String(uid), { uid: true, size: true, internalDate: true, envelope: true }, { uid: true });
  if (msg === false || msg.uid !== uid) return null;
  return identityOf(msg);
}

function identityOf(msg: FetchMessageObject): Pick<Placement, 'size' | 'internalDate' | 'messageId'> {
  const date = msg.internalDate instanceof Date ? msg.internalDate.getTime() : typeof msg.internalDate === 'string' ? Date.parse(msg.internalDate) : Number.NaN;
  return { size: msg.size ?? null, internalDate: Number.isFinite(date) ? date : null, messageId: msg.envelope?.messageId ?? null };
}

/** The UID of a copy placed in the target since the placement was recorded, or null. Leaves the target selected. */
async function findPlaced(client: ImapFlow, targetPath: string, placement: Placement): Promise<number | null> {
  const box = await client.mailboxOpen(targetPath, { readOnly: true });
  if (Number(box.uidValidity) !== placement.targetUidValidity || box.exists === 0) return null;
  for await (const msg of client.fetch(`${placement.targetUidNext}:*`, { uid: true, size: true, internalDate: true, envelope: true }, { uid: true })) {
    if (msg.uid < placement.targetUidNext) continue;
    const seen = identityOf(msg);
    if (seen.size === placement.size && seen.internalDate === placement.internalDate && seen.messageId === placement.messageId) return msg.uid;
  }
  return null;
}

function placementOf(progress: unknown): Placement | null {
  const placement = (progress as { placement?: Placement } | null)?.placement;
  return placement && typeof placement.targetUidNext === 'number' ? placement : null;
}

export function acceptsKeywords(permanent: Set<string> | undefined, keywords: readonly string[]): boolean {
  if (permanent === undefined || permanent.has('\\*')) return true;
  const held = new Set([...permanent].map((k) => k.toLowerCase()));
  return keywords.every((k) => held.has(k.toLowerCase()));
}

/**
 * Someone else changed the part this change touches since it was asked: the
 * MODSEQ moved and the part differs both from the server's state then and
 * from what the asker saw (the journal's own earlier changes included), so
 * neither the server as it was nor this journal's changes explain it.
 */
export function serverChangedIt(p: ChangePayload, current: ServerState, effect: ChangeEffect): boolean {
  return movedPast(current.modseq, p.baseModseq) && touchedPartChanged(p.base, current, effect) && touchedPartChanged(p.shown, current, effect);
}

function movedPast(current: string | null, base: string | null): boolean {
  return current !== null && base !== null && BigInt(current) > BigInt(base);
}

/** The server answered NO to the command (imapflow: `NotFound` for a folder that does not exist): it is there and refuses. */
export function answeredNo(err: unknown): boolean {
  const e = (err ?? {}) as { responseStatus?: unknown; code?: unknown };
  return e.responseStatus === 'NO' || e.code === 'NotFound';
}

function ended(end: Omit<ChangeEnd, 'now'>): ApplyResult {
  return { kind: 'ended', end };
}

function refused(reason: RefusalReason): ApplyResult {
  return { kind: 'refused', reason };
}
