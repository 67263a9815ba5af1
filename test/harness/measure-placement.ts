/**
 * Measures the harness on this machine (figures quoted in docs/testing.md): generating mailboxes,
 * placing them by IMAP APPEND and by writing the Maildir, and reading them back with fetchAll.
 * Run: node --import tsx test/harness/measure-placement.ts [count=5000] [profiles=small,bench]
 */
import { startDovecot } from './dovecot.ts';
import { mailAdmin } from './doveadm.ts';
import { generateMailbox } from './generator.ts';
import { appendMessages, writeMaildir } from './place-mail.ts';

const count = Number(process.argv[2] ?? 5000);
const profiles = (process.argv[3] ?? 'small,bench').split(',') as Array<'small' | 'bench'>;

const time = async <T>(fn: () => Promise<T> | T): Promise<[T, number]> => {
  const start = process.hrtime.bigint();
  const value = await fn();
  return [value, Number(process.hrtime.bigint() - start) / 1e6];
};

const dovecot = await startDovecot();
try {
  const admin = mailAdmin(dovecot);
  for (const profile of profiles) {
    const [messages, genMs] = await time(() => [...generateMailbox({ seed: 1, count, profile })]);
    const bytes = messages.reduce((n, m) => n + m.raw.length, 0);
    const mb = (bytes / 1e6).toFixed(1);
    const [, maildirMs] = await time(() => writeMaildir(dovecot, 'alice', `${profile}-maildir`, messages));
    await admin.createMailbox('alice', `${profile}-append`);
    const [, appendMs] = await time(() => appendMessages(dovecot, 'alice', `${profile}-append`, messages));
    const [served, fetchMs] = await time(() => admin.fetchAll('alice', `${profile}-maildir`));
    const row = (what: string, ms: number) =>
      console.log(
        `${profile.padEnd(6)} ${what.padEnd(22)} ${String(count).padStart(6)} msgs ${mb.padStart(7)} MB ${(ms / 1000).toFixed(2).padStart(8)} s ${(count / (ms / 1000)).toFixed(0).padStart(7)} msg/s`,
      );
    row('generate', genMs);
    row('writeMaildir+resync', maildirMs);
    row('appendMessages (IMAP)', appendMs);
    row(`fetchAll (${served.length})`, fetchMs);
  }
} finally {
  await dovecot.stop();
}
