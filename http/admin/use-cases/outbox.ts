/**
 * The outbox on the administrative surface (docs/admin-api.md "Outbox"): one
 * count per stage, a keyset page of sends newest first, one send with its
 * recipients — all read through the read-only query pool — and the operator's
 * withdrawal and re-offer of one send, made by the outbox actor (the writer of
 * the outbox), which the query pool names first.
 *
 * Only sends of a configured account exist here: a send of an account taken
 * out of the configuration is neither counted, listed, shown nor decided
 * (`RecordUnknown`), as no actor here could carry it.
 *
 * A send is named `o<row id>` on every surface. On the detail route any
 * other text, and a well-formed id that names no send here, is the same
 * 404 problem document: the path names a record, and there is none by that
 * name. In a write's body a malformed id is a 400 (the body names no send);
 * a well-formed unknown one is the outcome `RecordUnknown` (200).
 *
 * `by`, recorded with a withdrawal, is the identity of the credential that
 * asked (the entry's name, `issuer subject`, or `anonymous`).
 */
import { OperatorReply, OUTBOX_ID, type OperatorReply as Operator } from '../../../actors/outbox/protocol.ts';
import {
  OutboxPageReply,
  OutboxSummaryReply,
  OutgoingEmailReply,
  OutgoingLookupReply,
  outgoingRowOf,
  type OutboxEntry,
  type OutboxPageRequest,
  type OutboxStage,
  type OutgoingEmailDetail,
} from '../../../actors/mail-query/protocol/outbox-reads.ts';
import type { Principal } from '../../auth/principal.ts';
import { NOT_ISSUED_HERE } from '../cursor.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { invalidRequest, notFound, requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

/** The listing's path, which its cursors are bound to. */
export const OUTBOX_PATH = `${ADMIN_PREFIX}/outbox`;

export const OUTGOING_SHAPE = 'Name the send in outgoingEmail as the outbox listing gives it: o followed by digits, such as o12.';
export const OUTGOING_NOT_FOUND =
  'The deployment holds no send of a configured account by that identifier; name one as the outbox listing gives it: o followed by digits, such as o12.';

export type OutboxQuery = { account?: string | undefined; stage?: OutboxStage | undefined; pageSize: number; cursor?: string | undefined };
export type OutboxListing = { outgoingEmails: OutboxEntry[]; nextCursor?: string };
export type OutboxOutcome = Operator['outcome'];
export type OutboxDecisionAnswer = { outgoingEmail: string; outcome: OutboxOutcome };

type Reads = Pick<AdminDeps, 'config' | 'queryPool'>;

const configuredAccounts = (deps: Reads): string[] => deps.config.Accounts.map((a) => a.Id);

export async function outboxSummary(deps: Reads, principal: Principal | null, deadlineMs: number): Promise<OutboxSummaryReply> {
  requirePrincipal(principal, 'service.admin.read');
  const request = { type: 'mail-query.outbox-summary', accounts: configuredAccounts(deps) } as const;
  return deps.queryPool.ask(request, { reply: OutboxSummaryReply, deadlineMs });
}

export async function listOutbox(
  deps: Reads & Pick<AdminDeps, 'cursors'>,
  principal: Principal | null,
  query: OutboxQuery,
  deadlineMs: number,
): Promise<OutboxListing> {
  requirePrincipal(principal, 'service.admin.read');
  const account = query.account === undefined ? undefined : configuredAccount(deps.config, query.account);
  const filters = { account, stage: query.stage };
  const after = query.cursor === undefined ? undefined : positionOf(deps.cursors.read(OUTBOX_PATH, filters, query.cursor));
  const request: OutboxPageRequest = {
    type: 'mail-query.outbox',
    accounts: configuredAccounts(deps),
    pageSize: query.pageSize,
    ...(account !== undefined ? { account } : {}),
    ...(query.stage !== undefined ? { stage: query.stage } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const page = await deps.queryPool.ask(request, { reply: OutboxPageReply, deadlineMs });
  return { outgoingEmails: page.outgoingEmails, ...(page.next !== null ? { nextCursor: deps.cursors.issue(OUTBOX_PATH, filters, [page.next]) } : {}) };
}

/** One send with its recipients; the 404 problem (notFound) for text that names no send, or a send the deployment does not hold. */
export async function showOutgoingEmail(deps: Reads, principal: Principal | null, id: string, deadlineMs: number): Promise<OutgoingEmailDetail> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const row = outgoingRowOf(id);
  if (row === null) throw notFound(OUTGOING_NOT_FOUND);
  const request = { type: 'mail-query.outgoing-email', accounts: configuredAccounts(deps), outgoing: row } as const;
  const { outgoingEmail } = await deps.queryPool.ask(request, { reply: OutgoingEmailReply, deadlineMs });
  if (outgoingEmail === null) throw notFound(OUTGOING_NOT_FOUND);
  return outgoingEmail;
}

/**
 * Withdraw one send (`cancel`) or offer it again (`requeue`, with the
 * refusal restated or not): the outbox actor decides, in one write, and
 * answers one of the five outcomes, none of them a refusal.
 */
export async function decideOutgoingEmail(
  deps: Reads & Pick<AdminDeps, 'actor'>,
  principal: Principal | null,
  body: { outgoingEmail: string; refusalRestated?: boolean | undefined },
  decision: 'cancel' | 'requeue',
  deadlineMs: number,
): Promise<OutboxDecisionAnswer> {
  const caller = requirePrincipal(principal, 'service.admin.operate');
  const row = outgoingRowOf(body.outgoingEmail);
  if (row === null) throw invalidRequest(OUTGOING_SHAPE);
  const lookup = { type: 'mail-query.outgoing-lookup', accounts: configuredAccounts(deps), outgoing: row } as const;
  const { account } = await deps.queryPool.ask(lookup, { reply: OutgoingLookupReply, deadlineMs });
  if (account === null) return { outgoingEmail: body.outgoingEmail, outcome: 'RecordUnknown' };
  const message =
    decision === 'cancel'
      ? ({ type: 'outbox.cancel', outgoing: row, by: caller.identity, requester: null } as const)
      : ({ type: 'outbox.requeue', outgoing: row, by: caller.identity, refusalRestated: body.refusalRestated === true } as const);
  const reply = await deps.actor(OUTBOX_ID).ask(message, { reply: OperatorReply, deadlineMs });
  return { outgoingEmail: body.outgoingEmail, outcome: reply.outcome };
}

/** Our own signature vouches for the cursor; its position is still checked before it reaches SQL. */
function positionOf(position: ReadonlyArray<string | number>): number {
  const [id] = position;
  if (position.length !== 1 || !Number.isSafeInteger(id) || (id as number) < 1) throw invalidRequest(NOT_ISSUED_HERE);
  return id as number;
}
