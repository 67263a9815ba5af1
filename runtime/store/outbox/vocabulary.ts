/**
 * What the outbox tables' readers and the surfaces share of them, with no
 * statement: the stages a send stands at, how a send and a draft are named,
 * and the bounds of a listing page. The writer is the outbox actor
 * (outgoing.ts, drafts.ts); the query pool, the admin routes and the MCP
 * tools read and name with these.
 *
 * Shape only. Importable from anywhere.
 */
import { rowIdCodec } from '../row-id.ts';

/** The five stages of a send (admin-surface "Outbox stages"), in the order of the lifecycle. */
export const STAGES = ['Recorded', 'TransmissionBegun', 'Sent', 'Refused', 'Cancelled'] as const;
export type Stage = (typeof STAGES)[number];

/** admin-surface "Limits": an outbox page holds 1 to 200 sends, 50 unless asked. */
export const OUTBOX_PAGE_MAX = 200;
export const OUTBOX_PAGE_DEFAULT = 50;

/** An outgoing email as the admin surface and the tools name it: `o` and the row id. */
const outgoingId = rowIdCodec('o');
export const OUTGOING_ID_PATTERN = outgoingId.pattern;
export const outgoingIdOf = outgoingId.idOf;
export const outgoingRowOf = outgoingId.rowOf;

/** A draft as the tools name it: `d` and the row id. */
const draftId = rowIdCodec('d');
export const DRAFT_ID_PATTERN = draftId.pattern;
export const draftIdOf = draftId.idOf;
export const draftRowOf = draftId.rowOf;
