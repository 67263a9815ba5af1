/**
 * The MailAdmin operations done over a separate IMAP session, for servers without doveadm
 * (Cyrus): flags, expunge, move, mailboxes, STATUS, a UIDVALIDITY reset by delete-and-recreate,
 * and `fetchAll` — the server's truth as any client would read it (Dovecot's helper uses it too).
 */
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import type { MailAdmin, MailboxStatus, ServerMessage, Uids } from './doveadm.ts';
import { passwordOf, withImap, type ImapPeer } from './imap-client.ts';

function uidList(uids: Uids): string {
  return (Array.isArray(uids) ? uids : [uids]).join(',');
}

/** Attempts of `fetchAllOverImap` when a message goes while it is read. */
const FETCH_ATTEMPTS = 5;

export async function fetchAllOverImap(server: ImapPeer, user: string, mailbox: string): Promise<ServerMessage[]> {
  for (let attempt = 1; ; attempt++) {
    const messages = await fetchOnce(server, user, mailbox);
    if (messages !== 'changed') return messages;
    // Another session expunged a message between the listing and its body (a draft replaced, say):
    // read the folder again rather than report a message that is no longer there.
    if (attempt === FETCH_ATTEMPTS) throw new Error(`${mailbox}: messages kept disappearing while the folder was read`);
  }
}

async function fetchOnce(server: ImapPeer, user: string, mailbox: string): Promise<ServerMessage[] | 'changed'> {
  return withImap(server, user, async (client) => {
    const box = await client.mailboxOpen(mailbox, { readOnly: true });
    const out: ServerMessage[] = [];
    if (box.exists === 0) return out;
    let changed = false;
    // Read to the end even once a message is missing: the FETCH is left to finish on the session.
    for await (const msg of client.fetch('1:*', { uid: true, flags: true, source: true }, { uid: true })) {
      if (!Buffer.isBuffer(msg.source)) {
        changed = true;
        continue;
      }
      out.push({
        uid: msg.uid,
        flags: [...(msg.flags ?? [])].filter((f) => f !== '\\Recent').sort(),
        size: msg.source.length,
        sha256: createHash('sha256').update(msg.source).digest('hex'),
      });
    }
    return changed ? 'changed' : out.sort((a, b) => a.uid - b.uid);
  });
}

/** Send tagged commands on a raw connection after LOGIN (for what imapflow has no call for); resolves with the transcript. */
export function rawImap(server: ImapPeer, user: string, commands: string[], timeoutMs = 15_000): Promise<string> {
  const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const lines = [`a0 LOGIN ${q(user)} ${q(passwordOf(server, user))}`, ...commands.map((c, i) => `a${i + 1} ${c}`), `a${commands.length + 1} LOGOUT`];
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port });
    let text = '';
    let next = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`raw IMAP timed out:\n${text}`));
    }, timeoutMs);
    const send = () => socket.write(`${lines[next++]}\r\n`);
    socket.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      if (next === 0 && text.includes('\r\n')) return send();
      const tag = `a${next - 1} `;
      const done = text.split('\r\n').find((l) => l.startsWith(tag));
      if (!done) return;
      if (!/^a\d+ OK/.test(done) && next <= commands.length + 1) {
        clearTimeout(timer);
        socket.destroy();
        return reject(new Error(`${lines[next - 1]!.replace(/LOGIN .*/, 'LOGIN …')} → ${done}`));
      }
      if (next < lines.length) send();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

export function imapAdmin(server: ImapPeer): MailAdmin {
  const status = (user: string, mailbox: string) =>
    withImap(server, user, async (c): Promise<MailboxStatus> => {
      const s = await c.status(mailbox, { messages: true, uidNext: true, uidValidity: true, highestModseq: true });
      if (!s) throw new Error(`STATUS ${mailbox} failed`);
      return { messages: s.messages ?? 0, uidnext: s.uidNext ?? 0, uidvalidity: Number(s.uidValidity ?? 0), highestmodseq: Number(s.highestModseq ?? 0) };
    });
  const inBox = <T>(user: string, mailbox: string, fn: (c: Parameters<Parameters<typeof withImap>[2]>[0]) => Promise<T>) =>
    withImap(server, user, async (c) => {
      await c.mailboxOpen(mailbox);
      return fn(c);
    });
  return {
    async setFlags(user, mailbox, uids, flags) {
      await inBox(user, mailbox, (c) => c.messageFlagsSet(uidList(uids), flags, { uid: true }));
    },
    async addFlags(user, mailbox, uids, flags) {
      await inBox(user, mailbox, (c) => c.messageFlagsAdd(uidList(uids), flags, { uid: true }));
    },
    async removeFlags(user, mailbox, uids, flags) {
      await inBox(user, mailbox, (c) => c.messageFlagsRemove(uidList(uids), flags, { uid: true }));
    },
    async expunge(user, mailbox, uids) {
      await inBox(user, mailbox, (c) => c.messageDelete(uidList(uids), { uid: true }));
    },
    async move(user, from, to, uids) {
      await inBox(user, from, (c) => c.messageMove(uidList(uids), to, { uid: true }));
    },
    async createMailbox(user, name, specialUse) {
      if (specialUse) await rawImap(server, user, [`CREATE "${name}" (USE (${specialUse}))`, `SUBSCRIBE "${name}"`]);
      else await withImap(server, user, (c) => c.mailboxCreate(name).then(() => c.mailboxSubscribe(name)));
    },
    async renameMailbox(user, from, to) {
      await withImap(server, user, (c) => c.mailboxRename(from, to));
    },
    async deleteMailbox(user, name) {
      await withImap(server, user, (c) => c.mailboxDelete(name));
    },
    async listMailboxes(user) {
      return withImap(server, user, async (c) => (await c.list()).map((m) => m.path));
    },
    async resetUidValidity(user, mailbox, options = {}) {
      if (mailbox.toUpperCase() === 'INBOX') throw new Error('INBOX cannot be deleted over IMAP; reset another mailbox');
      if (options.renumber === false) throw new Error('over IMAP a reset always renumbers');
      const before = await status(user, mailbox);
      await withImap(server, user, async (c) => {
        await c.mailboxOpen(mailbox, { readOnly: true });
        const saved: Array<{ raw: Buffer; flags: string[]; date: Date }> = [];
        if (before.messages > 0) {
          for await (const m of c.fetch('1:*', { uid: true, flags: true, internalDate: true, source: true }, { uid: true })) {
            saved.push({ raw: m.source!, flags: [...(m.flags ?? [])].filter((f) => f !== '\\Recent'), date: new Date(m.internalDate!) });
          }
        }
        await c.mailboxClose();
        // Cyrus refuses to delete a special-use mailbox: drop the attribute first, restore it after.
        // Only an attribute the server sent (not one imapflow guessed from the name, as on Courier).
        const entry = (await c.list()).find((m) => m.path === mailbox);
        const special = entry?.specialUseSource === 'extension' ? entry.specialUse : undefined;
        if (special) await rawImap(server, user, [`SETMETADATA "${mailbox}" (/private/specialuse NIL)`]);
        await c.mailboxDelete(mailbox);
        // Servers derive UIDVALIDITY from the clock: make sure the new one cannot repeat it.
        await new Promise((r) => setTimeout(r, 1100));
        if (special) await rawImap(server, user, [`CREATE "${mailbox}" (USE (${special}))`]);
        else await c.mailboxCreate(mailbox);
        for (const m of saved) await c.append(mailbox, m.raw, m.flags, m.date);
      });
      const after = await status(user, mailbox);
      if (after.uidvalidity === before.uidvalidity) throw new Error('UIDVALIDITY did not change');
      return { before, after };
    },
    status,
    fetchAll: (user, mailbox) => fetchAllOverImap(server, user, mailbox),
  };
}
