/**
 * Several flag changes of one folder applied as one: outstanding changes
 * with the same effect (mark seen, flag, add the same keywords) go to the
 * server as one `UID STORE` over their UID set instead of one STORE and
 * one read each (docs/sync.md "Changes in batches"). Which changes form a
 * batch is the store's to say (changes.ts `flagBatch`); each still ends on
 * its own, with its own outcome and audit entry.
 *
 * Only with CONDSTORE, and decided as change-apply.ts decides one change:
 * 1. `UID FETCH <set> (FLAGS MODSEQ)`: a UID the server no longer has is
 *    `gone`; a message already holding the state is `applied`; one the
 *    server changed in the touched part since the change was asked is
 *    `superseded`.
 * 2. The rest: `UID STORE <set> … (UNCHANGEDSINCE <the highest MODSEQ just
 *    read>)`. Every later write to the folder gets a higher MODSEQ than any
 *    read in step 1, so the server refuses the STORE for any message
 *    changed after that read, exactly as the single change's guard does.
 * 3. The state after it: what the STORE's own untagged FETCH (FLAGS
 *    MODSEQ) said of each message it changed, and `UID FETCH <set> (FLAGS
 *    MODSEQ)` for the others only: holding the state, `applied`; gone,
 *    `gone`. Anything else (the guard refused it, the server did not apply
 *    it) is not ended here: the journal applies it alone later, which
 *    reads, decides and retries as for any change.
 *
 * Nothing is made durable before the STORE: it only adds what was asked,
 * so an attempt interrupted anywhere (kill -9 included) is attempted again
 * and step 1 finds the changes already applied (exactly once, as for one
 * change). The caller writes every ending in one transaction.
 */
import type { ImapFlow } from 'imapflow';
import type { Change, ChangeEnd, ServerState } from '../../runtime/store/mailbox/changes.ts';
import { type ChangeEffect, isSatisfied } from '../../runtime/store/mailbox/change-effect.ts';
import { acceptsKeywords, select, serverChangedIt, storeUniform } from './change-apply.ts';
import { splitFlags } from './server-flags.ts';

export type BatchEnding = { change: Change; end: Omit<ChangeEnd, 'now'> };

/** The changes of `batch` (same effect, folder and UIDVALIDITY; flagBatch) that ended; the others are left outstanding. */
export async function applyFlagBatch(client: ImapFlow, batch: readonly Change[]): Promise<BatchEnding[]> {
  const first = batch[0]!.payload;
  const effect = first.effect;
  if (!client.enabled.has('CONDSTORE')) return [];
  const box = await select(client, first.sourcePath);
  // A refusal is the single change's to record, with its reason.
  if (box.readOnly) return [];
  if (Number(box.uidValidity) !== first.uidValidity) return batch.map((change) => ({ change, end: { outcome: 'gone' } }));
  if (effect.kind === 'add-keywords' && !acceptsKeywords(box.permanentFlags, effect.keywords)) return [];
  const ended: BatchEnding[] = [];
  const before = await readStates(client, batch);
  const toStore: Change[] = [];
  for (const change of batch) {
    const current = before.get(change.payload.uid);
    if (current === undefined) ended.push({ change, end: { outcome: 'gone' } });
    else if (isSatisfied(current, effect)) ended.push({ change, end: { outcome: 'applied', server: current } });
    else if (serverChangedIt(change.payload, current, effect)) ended.push({ change, end: { outcome: 'superseded', server: current } });
    else toStore.push(change);
  }
  if (toStore.length === 0) return ended;
  const guard = highest(toStore.map((c) => before.get(c.payload.uid)!.modseq));
  // No MODSEQ to guard with: those go one at a time.
  if (guard === null) return ended;
  const answered = await storeSet(client, toStore, effect, guard);
  // Read back only what the STORE's answer left unsaid or unsatisfied (a refused guard, a message gone).
  const unanswered = toStore.filter((c) => !holds(answered.get(c.payload.uid), effect));
  const after = unanswered.length === 0 ? new Map<number, ServerState>() : await readStates(client, unanswered);
  for (const change of toStore) {
    const now = answered.get(change.payload.uid) ?? after.get(change.payload.uid);
    if (now === undefined) ended.push({ change, end: { outcome: 'gone' } });
    else if (isSatisfied(now, effect)) ended.push({ change, end: { outcome: 'applied', server: now } });
  }
  return ended;
}

/**
 * The guarded STORE over the changes' UIDs, and the state the server reported for each message it changed: every
 * untagged FETCH that came with the STORE, by UID (imapflow's `flags` events, emitted before the command ends).
 * Only those holding the state are taken as read back; the others are read again.
 */
async function storeSet(client: ImapFlow, changes: readonly Change[], effect: ChangeEffect, guard: bigint): Promise<Map<number, ServerState>> {
  const wanted = new Set(changes.map((c) => c.payload.uid));
  const answered = new Map<number, ServerState>();
  const onFlags = (e: { uid?: number; flags?: Set<string>; modseq?: bigint }): void => {
    if (e.uid === undefined || e.flags === undefined || !wanted.has(e.uid)) return;
    answered.set(e.uid, { ...splitFlags(e.flags), modseq: e.modseq !== undefined ? e.modseq.toString() : null });
  };
  client.on('flags', onFlags);
  try {
    const stored = await storeUniform(client, uidSet(changes), effect, { uid: true, unchangedSince: guard });
    if (!stored) throw new Error(`not a batchable change: ${effect.kind}`);
  } finally {
    client.off('flags', onFlags);
  }
  for (const [uid, state] of answered) if (!holds(state, effect)) answered.delete(uid);
  return answered;
}

const holds = (state: ServerState | undefined, effect: ChangeEffect): boolean => state !== undefined && isSatisfied(state, effect);

/** Each message's flags, keywords and MODSEQ by UID; a UID the server no longer holds is absent. */
async function readStates(client: ImapFlow, changes: readonly Change[]): Promise<Map<number, ServerState>> {
  const out = new Map<number, ServerState>();
  // imapflow's query type leaves MODSEQ out; it fetches it when asked (CONDSTORE is enabled here).
  const query = { uid: true, flags: true, ...{ modseq: true } };
  for await (const msg of client.fetch(uidSet(changes), query, { uid: true })) {
    out.set(msg.uid, { ...splitFlags(msg.flags), modseq: msg.modseq !== undefined ? msg.modseq.toString() : null });
  }
  return out;
}

function uidSet(changes: readonly Change[]): string {
  return [...new Set(changes.map((c) => c.payload.uid))].sort((a, b) => a - b).join(',');
}

function highest(modseqs: ReadonlyArray<string | null>): bigint | null {
  let max: bigint | null = null;
  for (const m of modseqs) {
    if (m === null) return null;
    const v = BigInt(m);
    if (max === null || v > max) max = v;
  }
  return max;
}
