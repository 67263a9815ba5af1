/**
 * Putting mail into a harness server: IMAP APPEND through imapflow (what a real client does, any server),
 * a fast path that writes Maildir files directly and asks Dovecot to resync, and `doveadm save`
 * for "new mail arrived" without any IMAP session. See docs/testing.md for which to use when.
 */
import { chownSync, existsSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Dovecot } from './dovecot.ts';
import { mailboxDir } from './doveadm.ts';
import { withImap, type ImapPeer } from './imap-client.ts';

export type MessageToPlace = { raw: Buffer | string; flags?: string[]; internalDate?: Date };
export type Messages = Iterable<MessageToPlace> | AsyncIterable<MessageToPlace>;

/** Commands queued on the connection ahead of the one awaited: hides our own latency, not Dovecot's. */
const APPEND_WINDOW = 64;

/** APPEND each message in order over one IMAP session; returns the UIDs Dovecot assigned (APPENDUID). */
export async function appendMessages(server: ImapPeer, user: string, mailbox: string, messages: Messages): Promise<number[]> {
  return withImap(server, user, async (client) => {
    const uids: number[] = [];
    const pending: Array<Promise<number>> = [];
    const drain = async (keep: number) => {
      while (pending.length > keep) uids.push(await pending.shift()!);
    };
    for await (const m of messages) {
      pending.push(
        client.append(mailbox, m.raw, m.flags ?? [], m.internalDate).then((r) => {
          if (!r) throw new Error(`APPEND to ${mailbox} failed`);
          return r.uid ?? 0;
        }),
      );
      // Keep the promises observed so a failure surfaces at drain time, not as "unhandled".
      pending[pending.length - 1]!.catch(() => undefined);
      await drain(APPEND_WINDOW);
    }
    await drain(0);
    return uids;
  });
}

/** `doveadm save`: delivery as an MTA/LDA would do it, behind every IMAP session's back. */
export async function saveMessage(dovecot: Dovecot, user: string, mailbox: string, raw: Buffer | string): Promise<void> {
  await dovecot.doveadm(['save', '-u', user, '-m', mailbox], raw);
}

const SYSTEM_FLAG_LETTERS: Record<string, string> = {
  '\\Draft': 'D',
  '\\Flagged': 'F',
  '\\Answered': 'R',
  '\\Seen': 'S',
  '\\Deleted': 'T',
};

/** Keyword → maildir letter (a–z), extending the mailbox's `dovecot-keywords` file as needed. */
function keywordLetters(dir: string, owner: { uid: number; gid: number } | undefined): (keyword: string) => string {
  const file = join(dir, 'dovecot-keywords');
  const byName = new Map<string, number>();
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = /^(\d+) (.+)$/.exec(line);
      if (m) byName.set(m[2]!, Number(m[1]));
    }
  }
  return (keyword) => {
    let idx = byName.get(keyword);
    if (idx === undefined) {
      const used = new Set(byName.values());
      idx = 0;
      while (used.has(idx)) idx++;
      if (idx >= 26) throw new Error('a maildir holds at most 26 keywords');
      byName.set(keyword, idx);
      const body = [...byName]
        .sort((a, b) => a[1] - b[1])
        .map(([k, i]) => `${i} ${k}\n`)
        .join('');
      writeFileSync(file, body);
      if (owner) chownSync(file, owner.uid, owner.gid);
    }
    return String.fromCharCode(97 + idx);
  };
}

const fileTimeBase = Math.floor(Date.now() / 1000) - 100_000_000;
let nextSerial = 0;

/** RFC 822 size as IMAP reports it: each LF not preceded by CR counts as CRLF. */
function virtualSize(raw: Buffer): number {
  let extra = 0;
  for (let i = raw.indexOf(10); i !== -1; i = raw.indexOf(10, i + 1)) if (i === 0 || raw[i - 1] !== 13) extra++;
  return raw.length + extra;
}

/**
 * Write messages straight into the mailbox's Maildir `cur/` (tmp/ then rename), named
 * `<secs>.M<serial>P<pid>.mailcairn,S=<size>,W=<vsize>:2,<flags>` with mtime = internal date, then
 * `doveadm force-resync` so Dovecot assigns UIDs (in the given order) before this returns.
 * Returns the number written. The mailbox is created first if missing.
 */
export async function writeMaildir(dovecot: Dovecot, user: string, mailbox: string, messages: Messages): Promise<number> {
  const counts = await writeMaildirs(dovecot, user, withFolder(messages, mailbox), [mailbox]);
  return counts.get(mailbox) ?? 0;
}

async function* withFolder(messages: Messages, folder: string): AsyncIterable<MessageToPlace & { folder: string }> {
  for await (const m of messages) yield { ...m, folder };
}

/**
 * `writeMaildir` for messages that name their folder each (a generated mailbox of several folders,
 * written as it is generated): every folder is created at its first message (those in `create` before
 * any) and all are resynced at the end. Returns the number written per folder.
 */
export async function writeMaildirs(
  dovecot: Dovecot,
  user: string,
  messages: Iterable<MessageToPlace & { folder: string }> | AsyncIterable<MessageToPlace & { folder: string }>,
  create: readonly string[] = [],
): Promise<Map<string, number>> {
  const owner = process.getuid?.() === 0 ? dovecot.mailOwner : undefined;
  const folders = new Map<string, { dir: string; letterFor: (keyword: string) => string; n: number }>();
  const prepare = async (name: string) => {
    const dir = mailboxDir(dovecot, user, name);
    if (!existsSync(join(dir, 'cur'))) {
      if (name.toUpperCase() === 'INBOX') await dovecot.doveadm(['mailbox', 'status', '-u', user, 'messages', 'INBOX']);
      else await dovecot.doveadm(['mailbox', 'create', '-s', '-u', user, name]);
    }
    const folder = { dir, letterFor: keywordLetters(dir, owner), n: 0 };
    folders.set(name, folder);
    return folder;
  };
  for (const name of create) await prepare(name);
  for await (const m of messages) {
    const folder = folders.get(m.folder) ?? (await prepare(m.folder));
    const raw = typeof m.raw === 'string' ? Buffer.from(m.raw, 'utf8') : m.raw;
    const letters = new Set<string>();
    for (const flag of m.flags ?? []) {
      if (flag === '\\Recent') continue;
      letters.add(SYSTEM_FLAG_LETTERS[flag] ?? (flag.startsWith('\\') ? '' : folder.letterFor(flag)));
    }
    letters.delete('');
    const info = [...letters].sort().join('');
    // Dovecot numbers new files by the time in their name: keep it increasing, and unique per process.
    const serial = nextSerial++;
    const name = `${fileTimeBase + serial}.M${serial}P${process.pid}.mailcairn,S=${raw.length},W=${virtualSize(raw)}`;
    const tmp = join(folder.dir, 'tmp', name);
    writeFileSync(tmp, raw);
    if (owner) chownSync(tmp, owner.uid, owner.gid);
    const when = m.internalDate ?? new Date();
    utimesSync(tmp, when, when);
    renameSync(tmp, join(folder.dir, 'cur', `${name}:2,${info}`));
    folder.n++;
  }
  for (const name of folders.keys()) await dovecot.doveadm(['force-resync', '-u', user, name]);
  return new Map([...folders].map(([name, f]) => [name, f.n]));
}
