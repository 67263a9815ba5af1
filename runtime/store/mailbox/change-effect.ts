/**
 * What a recorded mailbox change does to a message's flags and keywords,
 * as pure functions over sets: the overlay the local copy shows until the
 * server confirms (runtime/store/mailbox/changes.ts), and the decisions the
 * sync actor takes while applying (actors/imap-sync/change-apply.ts): is
 * the server already in the requested state, and did the server change
 * the very part this change touches since it was recorded (then the server
 * wins).
 *
 * IMAP keywords are case-insensitive (RFC 3501 2.3.2): they are compared
 * folded; a change's own keywords arrive folded already (the tool folds).
 *
 * Pure. Importable by store modules and the sync actor.
 */
export const CHANGE_KINDS = ['relocate', 'delete', 'set-seen', 'copy', 'set-flagged', 'add-keywords', 'remove-keywords', 'set-keywords'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/**
 * The journal's placement kinds (issue 13), asked by the outbox rather than of
 * a stored message: `append` places a stored MIME message (an outgoing email
 * or a draft, read from its row when applied) in the account's sent or
 * drafts folder; `remove-appended` removes what an earlier `append` placed.
 * They have no local message, so no overlay; see runtime/store/mailbox/placements.ts.
 */
export const PLACEMENT_KINDS = ['append', 'remove-appended'] as const;
export type PlacementKind = (typeof PLACEMENT_KINDS)[number];

/** Where an append goes: the folder mapped under that alias, else the one with that SPECIAL-USE. */
export const PLACEMENT_TARGETS = ['sent', 'drafts'] as const;
export type PlacementTarget = (typeof PLACEMENT_TARGETS)[number];
/** The outbox's tables an append reads its message from (migration 5). */
export const PLACEMENT_SOURCES = ['outgoing_emails', 'drafts'] as const;
export type PlacementSourceTable = (typeof PLACEMENT_SOURCES)[number];
export const PLACEMENT_FLAGS = ['\\Seen', '\\Draft'] as const;
export type PlacementFlag = (typeof PLACEMENT_FLAGS)[number];

/** What a placement job asks. */
export type PlacementEffect =
  | {
      kind: 'append';
      target: PlacementTarget;
      source: { table: PlacementSourceTable; id: number };
      flags: PlacementFlag[];
      /** The Message-ID header value of the stored message, with its angle brackets: how a placed copy is found again. */
      messageIdHeader: string;
    }
  | { kind: 'remove-appended'; appendJob: number };

/** The kinds that change flags or keywords (the others change where the message is). */
export const FLAG_KINDS: readonly ChangeKind[] = ['set-seen', 'set-flagged', 'add-keywords', 'remove-keywords', 'set-keywords'];

export type FlagState = { readonly flags: readonly string[]; readonly keywords: readonly string[] };

/** What one change asks for, without where the message is. */
export type ChangeEffect =
  | { kind: 'set-seen' | 'set-flagged'; value: boolean }
  | { kind: 'add-keywords' | 'remove-keywords'; keywords: string[] }
  | { kind: 'set-keywords'; keywords: string[] }
  | { kind: 'relocate' | 'copy'; targetPath: string }
  | { kind: 'delete' };

const SYSTEM_FLAG = { 'set-seen': '\\Seen', 'set-flagged': '\\Flagged' } as const;

const fold = (keyword: string): string => keyword.toLowerCase();

function sorted(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/** The state after the change; a change that is not about flags leaves it as it is. */
export function applyEffect(state: FlagState, effect: ChangeEffect): FlagState {
  switch (effect.kind) {
    case 'set-seen':
    case 'set-flagged': {
      const flag = SYSTEM_FLAG[effect.kind];
      const others = state.flags.filter((f) => f !== flag);
      return { flags: sorted(effect.value ? [...others, flag] : others), keywords: state.keywords };
    }
    case 'add-keywords': {
      const held = new Set(state.keywords.map(fold));
      return { flags: state.flags, keywords: sorted([...state.keywords, ...effect.keywords.filter((k) => !held.has(fold(k)))]) };
    }
    case 'remove-keywords': {
      const gone = new Set(effect.keywords.map(fold));
      return { flags: state.flags, keywords: state.keywords.filter((k) => !gone.has(fold(k))) };
    }
    case 'set-keywords':
      return { flags: state.flags, keywords: sorted(effect.keywords) };
    default:
      return state;
  }
}

/** Whether two states are the same (keywords compared folded). */
export function sameState(a: FlagState, b: FlagState): boolean {
  const keys = (s: FlagState): string => sorted(s.keywords.map(fold)).join('\0');
  return sorted(a.flags).join('\0') === sorted(b.flags).join('\0') && keys(a) === keys(b);
}

/** Whether `state` already is what the change asks for. */
export function isSatisfied(state: FlagState, effect: ChangeEffect): boolean {
  return sameState(applyEffect(state, effect), state);
}

/**
 * Whether the part of the message this change touches differs between
 * `before` (what the mirror held when the change was recorded) and `now`
 * (what the server holds): someone changed the same flag or keywords on
 * the server in between, and the server wins. A change elsewhere on the
 * message (another flag) is no conflict.
 */
export function touchedPartChanged(before: FlagState, now: FlagState, effect: ChangeEffect): boolean {
  switch (effect.kind) {
    case 'set-seen':
    case 'set-flagged': {
      const flag = SYSTEM_FLAG[effect.kind];
      return before.flags.includes(flag) !== now.flags.includes(flag);
    }
    case 'add-keywords':
    case 'remove-keywords': {
      const has = (s: FlagState, k: string): boolean => s.keywords.some((held) => fold(held) === fold(k));
      return effect.keywords.some((k) => has(before, k) !== has(now, k));
    }
    case 'set-keywords':
      return !sameState({ flags: [], keywords: before.keywords }, { flags: [], keywords: now.keywords });
    default:
      return false;
  }
}
