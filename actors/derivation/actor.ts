/**
 * The derivation writer (`derivation`): parses stored raw MIME and writes
 * what is derived from it, off the accounts' threads (it shares the system
 * actors' thread: a thread of its own measured no faster and cost an
 * isolate, docs/performance-history.md "Derived data off the sync thread").
 * One per deployment: the sync actors of every account ask it to catch up
 * (`derivation.catch-up`); their threads go on fetching and storing while it
 * parses and indexes.
 *
 * Work is done in segments (at most SEGMENT_MESSAGES rows and about
 * SEGMENT_BYTES of raw MIME), each written in one transaction, with a turn
 * of the event loop between two, so the catch-ups of several accounts
 * interleave and the stop at shutdown is heard. The catch-ups of one account
 * run one after another (a later one finds what the earlier one left).
 *
 * A crash loses nothing: a row is derived in the transaction that writes its
 * documents, or stays underived and is taken by the next catch-up (every
 * synchronization run ends with one for the whole account).
 *
 * The same transaction records the row's correspondents as collected
 * contacts (collect-correspondents.ts decides who; docs/contacts.md
 * "Collection"): the message's parsed headers exist here, once.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineActor, later, type ActorContext } from '../../runtime/actor.ts';
import { isStorageFull, noteStorageFull, noteStorageWritable } from '../../runtime/storage-full.ts';
import { type Database, errorCode, isBusy } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { deriveFirst, type FirstDerivation, lastUnderivedId, rawMimeOf, underivedSegment } from '../../runtime/store/mailbox/underived.ts';
import { MIME_PARSE_IN_PLACE, type ParseInPlace } from '../mime-parse/protocol.ts';
import { EMBEDDING_ID } from '../embedding/protocol.ts';
import { MAIL_RULES_ID } from '../mail-rules/protocol.ts';
import { SPAM_ID } from '../spam/protocol.ts';
import { CatchUp, type CatchUpReply, DerivationConfig } from './protocol.ts';
import { correspondentsOf, folderRoleOf, type OwnAddresses, ownAddressesOf } from './collect-correspondents.ts';

/**
 * Rows per transaction: one commit per segment, short enough that a sync
 * actor's store waits little for the write lock. A segment's raw MIME and
 * everything parsed from it stay alive until its write, across the system
 * thread's scavenges (a 16 MiB young generation), so they are promoted and
 * only a major collection frees them: 64 rows / 4 MiB held the thread at
 * 45–90 MiB through a 50,000-message mirror, 16 rows / 1 MiB at 40–60 for
 * the same CPU (docs/performance.md, "Peak memory at 50,000"). 256 rows /
 * 16 MiB measured a little faster in wall time and up to 90 MiB more at
 * peak (docs/performance-history.md "Derived data off the sync thread").
 */
const SEGMENT_MESSAGES = 16;
/** Raw MIME read per segment (the first row is taken whatever its size). */
const SEGMENT_BYTES = 1024 * 1024;

const Msg = z.discriminatedUnion('type', [CatchUp]);

/** Further attempts at a segment's write refused as busy, and the wait before each. */
const BUSY_RETRIES = 5;
const BUSY_RETRY_MS = 1_000;

/** Where the derivation writer reports a full disk from. */
const PLACE = 'derivation';

type State = {
  db: Database;
  parse: ParseInPlace;
  /** The catch-up under way or queued last, per account. */
  tails: Map<string, Promise<unknown>>;
  stopping: boolean;
  /** Each account's own addresses; null when collection is switched off. */
  collecting: ReadonlyMap<string, OwnAddresses> | null;
};

/**
 * Writes one segment's derivations. The database still locked by another
 * writer after the busy timeout (a heavily loaded machine) is not a defect:
 * the write is tried again, BUSY_RETRIES times a second apart (its
 * transaction begins IMMEDIATE, so a refused attempt leaves nothing held),
 * before the writer fails and is restarted. A full disk is noted and fails
 * at once: the segment stays underived (listed as not indexed yet), and a
 * later catch-up takes it.
 */
async function writeSegment(state: State, ctx: ActorContext, results: FirstDerivation[]): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return deriveFirst(state.db, results, Date.now());
    } catch (err) {
      if (isStorageFull(err)) noteStorageFull(ctx.log, PLACE, err);
      if (!isBusy(err) || attempt > BUSY_RETRIES || state.stopping) throw err;
      ctx.log.info({ event: 'derivation.busy', attempt, code: errorCode(err) }, 'derivation.busy');
      await sleep(BUSY_RETRY_MS);
    }
  }
}

async function catchUp(state: State, ctx: ActorContext, msg: CatchUp): Promise<CatchUpReply> {
  const reply: CatchUpReply = { derived: 0, unreadable: [], missingRaw: 0 };
  const throughId = msg.throughId ?? lastUnderivedId(state.db, msg.account);
  let afterId = 0;
  const started = Date.now();
  while (!state.stopping) {
    const segment = underivedSegment(state.db, msg.account, { afterId, throughId, limit: SEGMENT_MESSAGES, maxBytes: SEGMENT_BYTES });
    if (segment.length === 0) break;
    afterId = segment[segment.length - 1]!.id;
    const results: FirstDerivation[] = [];
    const own = state.collecting?.get(msg.account);
    for (const m of segment) {
      if (!m.hasRaw) {
        reply.missingRaw += 1;
        continue;
      }
      const raw = rawMimeOf(state.db, m.id);
      // Gone since the segment was read: erased (the row goes with it), or the next catch-up reports it missing.
      if (raw === null) continue;
      const parsed = state.parse(raw, msg.account);
      if (!parsed.ok) reply.unreadable.push({ bindingId: m.bindingId, uid: m.uid, failure: parsed });
      results.push({
        id: m.id,
        parsed: parsed.ok ? parsed.message : null,
        ...(parsed.ok && own !== undefined ? { correspondents: correspondentsOf(parsed.message, folderRoleOf(m.alias), own) } : {}),
      });
    }
    reply.derived += await writeSegment(state, ctx, results);
    noteStorageWritable(ctx.log, PLACE);
    await nextTurn();
  }
  if (reply.derived > 0 || reply.missingRaw > 0) {
    ctx.log.debug(
      {
        event: 'derivation.caught-up',
        account: msg.account,
        derived: reply.derived,
        unreadable: reply.unreadable.length,
        missingRaw: reply.missingRaw,
        ms: Date.now() - started,
      },
      'derivation.caught-up',
    );
  }
  // Newly searchable mail is the embedding actor's arrivals (a doorbell: it reads what is missing from the store).
  if (reply.derived > 0) ctx.tell(EMBEDDING_ID, { type: 'embedding.derived' });
  // The same for the rules stage, per account (it judges what lies past its cursor).
  if (reply.derived > 0) ctx.tell(MAIL_RULES_ID, { type: 'mail-rules.derived', account: msg.account });
  // And the spam stage's (it judges what is past its cursor; ignored unless Spam:Enabled).
  if (reply.derived > 0) ctx.tell(SPAM_ID, { type: 'spam.derived', account: msg.account });
  if (reply.missingRaw > 0) ctx.log.warn({ event: 'derivation.raw-missing', account: msg.account, count: reply.missingRaw }, 'derivation.raw-missing');
  return reply;
}

export default defineActor({
  name: 'derivation',
  config: DerivationConfig,
  messages: Msg,
  async init(config, ctx) {
    // Checkpoints are left to the store maintenance actor, as the sync actors leave them.
    const db = openSlice(config.store, { checkpoints: 'background' });
    ctx.defer(() => {
      db.close();
    });
    const { parseMessage } = (await import(MIME_PARSE_IN_PLACE.href)) as { parseMessage: ParseInPlace };
    const collecting = config.collection.enabled ? new Map(config.collection.accounts.map((a) => [a.id, ownAddressesOf(a.ownAddresses)] as const)) : null;
    const state: State = { db, parse: parseMessage, tails: new Map(), stopping: false, collecting };
    return state;
  },
  handle(state, msg, ctx) {
    const prior = state.tails.get(msg.account) ?? Promise.resolve();
    // The previous catch-up's failure was answered to its own asker; this one starts afresh.
    const work = prior.then(
      () => catchUp(state, ctx, msg),
      () => catchUp(state, ctx, msg),
    );
    state.tails.set(msg.account, work);
    const forget = (): void => {
      if (state.tails.get(msg.account) === work) state.tails.delete(msg.account);
    };
    work.then(forget, forget);
    return later(work);
  },
  stop(state) {
    state.stopping = true;
  },
});
