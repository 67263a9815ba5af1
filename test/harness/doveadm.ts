/**
 * Changes made behind the service's back, and the server-side truth to compare a mirror with:
 * typed helpers over `doveadm` (flags, keywords, expunge, move, mailboxes, UIDVALIDITY resets,
 * STATUS) plus `fetchAll`, which reads every message over a separate IMAP session.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Dovecot } from './dovecot.ts';
import { fetchAllOverImap } from './imap-admin.ts';

export type MailboxStatus = { messages: number; uidnext: number; uidvalidity: number; highestmodseq: number };
export type ServerMessage = { uid: number; flags: string[]; size: number; sha256: string };
export type Uids = number | number[];

export type MailAdmin = {
  setFlags(user: string, mailbox: string, uids: Uids, flags: string[]): Promise<void>;
  addFlags(user: string, mailbox: string, uids: Uids, flags: string[]): Promise<void>;
  removeFlags(user: string, mailbox: string, uids: Uids, flags: string[]): Promise<void>;
  expunge(user: string, mailbox: string, uids: Uids): Promise<void>;
  move(user: string, from: string, to: string, uids: Uids): Promise<void>;
  createMailbox(user: string, name: string, specialUse?: string): Promise<void>;
  renameMailbox(user: string, from: string, to: string): Promise<void>;
  deleteMailbox(user: string, name: string): Promise<void>;
  listMailboxes(user: string): Promise<string[]>;
  /** A new UIDVALIDITY; with `renumber` (default) Dovecot also gives every message a new UID from 1. */
  resetUidValidity(user: string, mailbox: string, options?: { renumber?: boolean }): Promise<{ before: MailboxStatus; after: MailboxStatus }>;
  status(user: string, mailbox: string): Promise<MailboxStatus>;
  /** Every message as the server serves it (BODY.PEEK[]), sorted by UID; `\Recent` left out. */
  fetchAll(user: string, mailbox: string): Promise<ServerMessage[]>;
};

/** `1,2,3,7,9,10` → `1:3,7,9:10`, so a query for thousands of UIDs stays short. */
export function uidSet(uids: Uids): string {
  const list = [...new Set(Array.isArray(uids) ? uids : [uids])].sort((a, b) => a - b);
  if (list.length === 0) throw new Error('empty UID set');
  const parts: string[] = [];
  let start = list[0]!;
  let prev = start;
  for (const uid of list.slice(1).concat(Number.NaN)) {
    if (uid === prev + 1) {
      prev = uid;
      continue;
    }
    parts.push(start === prev ? `${start}` : `${start}:${prev}`);
    start = prev = uid;
  }
  return parts.join(',');
}

/** Modified UTF-7 (RFC 3501 §5.1.3), as Dovecot names folders on disk. */
export function mutf7(name: string): string {
  return name.replace(/&/g, '&-').replace(/[^\x20-\x7e]+/g, (run) => {
    const be = Buffer.from(run, 'utf16le').swap16();
    return `&${be.toString('base64').replace(/=+$/, '').replace(/\//g, ',')}-`;
  });
}

/** Directory of a mailbox in the harness layout (Maildir++, `/` separator → `.` on disk). */
export function mailboxDir(dovecot: Dovecot, user: string, mailbox: string): string {
  const root = dovecot.maildir(user);
  if (mailbox.toUpperCase() === 'INBOX') return root;
  return join(root, `.${mutf7(mailbox).replace(/\//g, '.')}`);
}

function parseStatus(out: string): MailboxStatus {
  const num = (key: string): number => {
    const m = new RegExp(`\\b${key}=(\\d+)`).exec(out);
    if (!m) throw new Error(`doveadm status without ${key}: ${out}`);
    return Number(m[1]);
  };
  return { messages: num('messages'), uidnext: num('uidnext'), uidvalidity: num('uidvalidity'), highestmodseq: num('highestmodseq') };
}

export function mailAdmin(dovecot: Dovecot): MailAdmin {
  const adm = (args: string[]) => dovecot.doveadm(args);
  const flagsCmd = (verb: string) => async (user: string, mailbox: string, uids: Uids, flags: string[]) => {
    if (flags.length === 0 && verb !== 'replace') return;
    await adm(['flags', verb, '-u', user, flags.join(' '), 'mailbox', mailbox, 'uid', uidSet(uids)]);
  };
  const status = async (user: string, mailbox: string) =>
    parseStatus(await adm(['-f', 'flow', 'mailbox', 'status', '-u', user, 'messages uidnext uidvalidity highestmodseq', mailbox]));
  return {
    setFlags: flagsCmd('replace'),
    addFlags: flagsCmd('add'),
    removeFlags: flagsCmd('remove'),
    async expunge(user, mailbox, uids) {
      await adm(['expunge', '-u', user, 'mailbox', mailbox, 'uid', uidSet(uids)]);
    },
    async move(user, from, to, uids) {
      await adm(['move', '-u', user, to, 'mailbox', from, 'uid', uidSet(uids)]);
    },
    async createMailbox(user, name, specialUse) {
      // Dovecot 2.3 keeps SPECIAL-USE in its config only, so declare it there and reload first.
      if (specialUse) await dovecot.declareSpecialUse(name, specialUse);
      await adm(['mailbox', 'create', '-s', '-u', user, name]);
    },
    async renameMailbox(user, from, to) {
      await adm(['mailbox', 'rename', '-s', '-u', user, from, to]);
    },
    async deleteMailbox(user, name) {
      await adm(['mailbox', 'delete', '-s', '-u', user, name]);
    },
    async listMailboxes(user) {
      return (await adm(['mailbox', 'list', '-u', user])).split('\n').filter(Boolean);
    },
    async resetUidValidity(user, mailbox, options = {}) {
      const before = await status(user, mailbox);
      if (options.renumber === false) {
        await adm(['mailbox', 'update', '-u', user, '--uid-validity', String(before.uidvalidity + 1), mailbox]);
      } else {
        // Forget the UID list and indexes: the next sync numbers every file again from 1 under a
        // fresh UIDVALIDITY (Dovecot takes it from the user's dovecot-uidvalidity counter).
        const dir = mailboxDir(dovecot, user, mailbox);
        for (const f of ['dovecot-uidlist', 'dovecot.index', 'dovecot.index.log', 'dovecot.index.log.2', 'dovecot.index.cache']) {
          rmSync(join(dir, f), { force: true });
        }
        await adm(['force-resync', '-u', user, mailbox]);
      }
      let after = await status(user, mailbox);
      if (after.uidvalidity === before.uidvalidity) {
        await adm(['mailbox', 'update', '-u', user, '--uid-validity', String(before.uidvalidity + 1), mailbox]);
        after = await status(user, mailbox);
      }
      return { before, after };
    },
    status,
    fetchAll: (user, mailbox) => fetchAllOverImap(dovecot, user, mailbox),
  };
}
