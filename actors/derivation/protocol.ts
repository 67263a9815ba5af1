/**
 * Public messages of the derivation writer (`derivation`): the actor that
 * turns stored raw MIME into what agents read and search — the derived
 * columns of `messages`, the search document and the passages — off the
 * accounts' threads, so an account's sync thread only fetches and stores raw copies
 * (docs/performance-history.md, "Derived data off the sync thread").
 *
 * Its queue is the store itself (runtime/store/mailbox/underived.ts): a sync
 * actor asks it to catch up after each stored batch and waits for the
 * answers at the end of each folder, which is where it learns which messages
 * turned out unreadable.
 */
import { z } from 'zod';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import { ParseReply } from '../mime-parse/protocol.ts';

/** The module the derivation writer runs from. Named here, as a URL, so that the composition root starts it without importing it. */
export const DERIVATION_ENTRY = moduleUrl('./actor.ts', import.meta.url);

export const DERIVATION_ID: ActorId<DerivationProtocol> = 'derivation';

/**
 * Contact collection (docs/contacts.md "Collection"): whether the writer
 * records correspondents at all (`MailSynchronization:CollectContacts`), and
 * each account's own addresses, which are never collected.
 */
/** What a folder's mail says about its correspondents. */
export type FolderRole = 'received' | 'sent' | 'none';

/**
 * The role of a mirrored folder (contact collection, and which mail the rules
 * and spam stages judge: only `received`), by its alias: `sent` is the folder the
 * owner's sent mail is filed in (the outbox files its copies there too:
 * actors/imap-sync/placement-apply.ts); drafts were not sent, and junk and
 * trash hold what the owner did not want.
 */
export function folderRoleOf(alias: string): FolderRole {
  switch (alias) {
    case 'sent':
      return 'sent';
    case 'drafts':
    case 'junk':
    case 'spam':
    case 'trash':
      return 'none';
    default:
      return 'received';
  }
}

export const CollectionConfig = z.strictObject({
  enabled: z.boolean(),
  accounts: z.array(z.strictObject({ id: z.string().min(1), ownAddresses: z.array(z.string()) })),
});
export type CollectionConfig = z.infer<typeof CollectionConfig>;

export const DerivationConfig = z.strictObject({ store: StoreSlice, collection: CollectionConfig });
export type DerivationConfig = z.infer<typeof DerivationConfig>;

/**
 * Derive the account's stored mail not derived yet, up to `throughId`
 * (null: all of it). Answered when every such row was derived, or found
 * without raw MIME (left underived, counted as `missingRaw`).
 */
export const CatchUp = z.strictObject({
  type: z.literal('derivation.catch-up'),
  account: z.string().min(1),
  throughId: z.number().int().nonnegative().nullable(),
});
export type CatchUp = z.infer<typeof CatchUp>;

const Failure = ParseReply.options[1];

export const CatchUpReply = z.strictObject({
  /** Rows derived by this ask (readable and unreadable). */
  derived: z.number().int().nonnegative(),
  /** The rows that could not be parsed, with why: the sync actor logs and counts them per folder. */
  unreadable: z.array(z.strictObject({ bindingId: z.number().int(), uid: z.number().int(), failure: Failure })),
  missingRaw: z.number().int().nonnegative(),
});
export type CatchUpReply = z.infer<typeof CatchUpReply>;

export type DerivationProtocol = ProtocolOf<z.input<typeof CatchUp>, { 'derivation.catch-up': CatchUpReply }>;
