/**
 * The MIME of a send or a draft, composed once by nodemailer's composer
 * (never by hand) with a Message-ID minted here, once. A reply or a forward
 * reads the stored original's raw MIME with the product's own MIME parser
 * (actors/mime-parse, loaded in place through `MIME_READ_ORIGINAL`): a reply
 * takes its audience (Reply-To, else From; To and Cc for everyone), subject,
 * threading headers and a quote of the body text agents see from it; a
 * forward carries its attachments, decoded byte for byte, less the images
 * its HTML shows, and a quoted header block.
 *
 * Authored header values never carry a line break (the tool refuses them;
 * `assertSingleLine` refuses them again here, so no caller can inject a
 * header), and `Bcc` is in no header: its recipients are in the envelope
 * and the recipients table only.
 */
import { randomUUID } from 'node:crypto';
import type MailComposer from 'nodemailer/lib/mail-composer';
import { AppError } from '../../runtime/errors.ts';
import { type Address, MIME_READ_ORIGINAL, type OriginalMessage, type ReadOriginal } from '../mime-parse/protocol.ts';
import { type Composition, SEND_LIMITS } from './protocol.ts';
import type { RecipientHeader } from '../../runtime/store/outbox/outgoing.ts';

export type Composed = {
  raw: Uint8Array;
  /** With angle brackets, as in the header. */
  messageId: string;
  recipients: Array<{ address: string; header: RecipientHeader }>;
  /** What a draft answers, for its later revisions. */
  answering: { storedMessageId: number; answering: 'senderOnly' | 'everyone' | 'forward' } | null;
};

/** A plain addr-spec: no display name, no spaces, no brackets or separators that could start another address or header. */
const ADDRESS = /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+$/;

export function invalid(sentence: string): AppError {
  return new AppError('E_TOOL_INVALID_INPUT', { message: sentence });
}

export function assertSingleLine(value: string, field: string): void {
  if (/[\r\n\u2028\u2029]/.test(value)) throw invalid(`${field} must be one line: line breaks are refused in header values`);
}

/** Lower-cased domain, kept as written otherwise (a local part may be case-sensitive). */
export function normalAddress(address: string, field: string): string {
  const trimmed = address.trim();
  if (!ADDRESS.test(trimmed)) throw invalid(`every address in ${field} must be a plain address such as name@example.org (no display name)`);
  const at = trimmed.lastIndexOf('@');
  return `${trimmed.slice(0, at)}@${trimmed.slice(at + 1).toLowerCase()}`;
}

/** Recipients in header order, each address once (the first header naming it wins). */
function recipientList(groups: Array<[RecipientHeader, readonly string[]]>): Array<{ address: string; header: RecipientHeader }> {
  const seen = new Set<string>();
  const list: Array<{ address: string; header: RecipientHeader }> = [];
  for (const [header, addresses] of groups)
    for (const raw of addresses) {
      const address = normalAddress(raw, header);
      if (seen.has(address.toLowerCase())) continue;
      seen.add(address.toLowerCase());
      list.push({ address, header });
    }
  if (list.length === 0) throw invalid('name at least one recipient');
  if (list.length > SEND_LIMITS.recipients) throw invalid(`at most ${SEND_LIMITS.recipients} recipients may be named in all`);
  return list;
}

/** The addresses of a header, groups already flattened by the parser; a name without an address is skipped. */
function addressesOf(field: readonly Address[]): string[] {
  return field.flatMap((a) => (a.address ? [a.address] : []));
}

/** A header's mailboxes as text for the forward's header block: `"Name" <address>`, or the bare address. */
function mailboxesText(field: readonly Address[]): string {
  return field.map((a) => (a.name ? `"${a.name.replace(/["\\]/g, '\\$&')}"${a.address ? ` <${a.address}>` : ''}` : a.address)).join(', ');
}

const oneLine = (value: string): string => value.replace(/[\r\n\u2028\u2029]+/g, ' ').trim();

function prefixed(prefix: 'Re' | 'Fwd', subject: string): string {
  const base = oneLine(subject);
  return new RegExp(`^${prefix}:`, 'i').test(base) ? base : `${prefix}: ${base}`;
}

function quoted(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

const escapeHtml = (text: string): string => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

type Original = { id: number; parsed: OriginalMessage };

let reader: Promise<ReadOriginal> | undefined;

/** The stored original, read by the in-tree parser; one it calls unreadable (empty, no header at all) cannot be answered. */
export async function parseOriginal(id: number, raw: Uint8Array): Promise<Original> {
  // Loaded on the first reply or forward, not at every start of the outbox's thread.
  reader ??= import(MIME_READ_ORIGINAL.href).then((m: { readOriginal: ReadOriginal }) => m.readOriginal);
  const parsed = (await reader)(raw);
  if (parsed === null) throw invalid('the original email cannot be parsed, so it cannot be replied to or forwarded');
  return { id, parsed };
}

/** Message ids kept in a reply's `References`: the newest, including the original's own (RFC 5322 allows trimming the oldest). */
const MAX_REFERENCES = 20;

/** `References` of a reply: the original's chain and its own id, the oldest dropped past a bound. */
function referencesOf(parsed: OriginalMessage): string[] {
  const chain = [...parsed.references];
  if (parsed.messageId) chain.push(parsed.messageId);
  return chain.slice(-MAX_REFERENCES);
}

/**
 * Compose the MIME. `original` is the parsed stored email a reply or
 * forward names (the caller read it from the store, within the caller's scope).
 */
export async function compose(from: string, composition: Composition, original: Original | null, now: Date): Promise<Composed> {
  const messageId = `<${randomUUID()}@${domainOf(from)}>`;
  const mail: ConstructorParameters<typeof MailComposer>[0] = {
    from,
    messageId,
    date: now,
    text: composition.plainTextBody,
    ...(composition.htmlBody !== null ? { html: composition.htmlBody } : {}),
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  let recipients: Composed['recipients'];
  let answering: Composed['answering'] = null;
  if (composition.kind === 'new') {
    assertSingleLine(composition.subject, 'subject');
    if (composition.subject.length > SEND_LIMITS.subjectLength) throw invalid(`subject may be at most ${SEND_LIMITS.subjectLength} characters`);
    recipients = recipientList([
      ['to', composition.to],
      ['cc', composition.cc],
      ['bcc', composition.bcc],
    ]);
    mail.subject = composition.subject;
  } else {
    if (original === null) throw new AppError('E_NOT_FOUND');
    const p = original.parsed;
    const sender = addressesOf(p.from)[0] ?? null;
    const when = p.sentAt !== null ? new Date(p.sentAt).toUTCString() : 'an unknown date';
    const quoteText = p.bodyText;
    if (composition.kind === 'reply') {
      const replyTo = addressesOf(p.replyTo);
      const audience = replyTo.length > 0 ? replyTo : sender ? [sender] : [];
      const own = from.toLowerCase();
      const others = composition.audience === 'everyone' ? [...addressesOf(p.to), ...addressesOf(p.cc)].filter((a) => a.toLowerCase() !== own) : [];
      const to = audience.filter((a) => a.toLowerCase() !== own || others.length === 0);
      if (to.length + others.length === 0) throw invalid('the original names no sender to reply to');
      recipients = recipientList([
        ['to', to.length > 0 ? to : others],
        ['cc', [...(to.length > 0 ? others : []), ...composition.cc]],
      ]);
      mail.subject = prefixed('Re', p.subject ?? '');
      if (p.messageId) mail.inReplyTo = p.messageId;
      const references = referencesOf(p);
      if (references.length > 0) mail.references = references;
      const intro = `On ${when}, ${sender ?? 'the sender'} wrote:`;
      mail.text = `${composition.plainTextBody}\n\n${intro}\n${quoted(quoteText)}\n`;
      if (composition.htmlBody !== null)
        mail.html = `${composition.htmlBody}<br><br><div>${escapeHtml(intro)}</div><blockquote>${escapeHtml(quoteText).replace(/\n/g, '<br>')}</blockquote>`;
      answering = { storedMessageId: original.id, answering: composition.audience };
    } else {
      recipients = recipientList([
        ['to', composition.to],
        ['cc', composition.cc],
        ['bcc', composition.bcc],
      ]);
      mail.subject = prefixed('Fwd', p.subject ?? '');
      const block = [
        '---------- Forwarded message ----------',
        `From: ${oneLine(mailboxesText(p.from))}`,
        `Date: ${when}`,
        `Subject: ${oneLine(p.subject ?? '')}`,
        `To: ${oneLine(addressesOf(p.to).join(', '))}`,
      ].join('\n');
      mail.text = `${composition.plainTextBody}\n\n${block}\n\n${quoteText}\n`;
      if (composition.htmlBody !== null)
        mail.html = `${composition.htmlBody}<br><br><pre>${escapeHtml(block)}</pre><div>${escapeHtml(quoteText).replace(/\n/g, '<br>')}</div>`;
      const attachments = p.attachments();
      if (attachments.length > SEND_LIMITS.attachments)
        throw invalid(`a forward carries at most ${SEND_LIMITS.attachments} attachments; the original has more`);
      const total = attachments.reduce((sum, a) => sum + a.content.byteLength, 0);
      if (total > SEND_LIMITS.attachmentBytes)
        throw invalid(`a forward carries at most ${SEND_LIMITS.attachmentBytes} bytes of attachments; the original's are larger`);
      mail.attachments = attachments.map((a) => ({
        content: a.content,
        contentType: a.contentType,
        ...(a.filename ? { filename: a.filename } : {}),
        contentDisposition: 'attachment',
      }));
      answering = { storedMessageId: original.id, answering: 'forward' };
    }
  }
  const headerOf = (h: RecipientHeader): string[] => recipients.filter((r) => r.header === h).map((r) => r.address);
  if (headerOf('to').length > 0) mail.to = headerOf('to');
  if (headerOf('cc').length > 0) mail.cc = headerOf('cc');
  // Loaded on the first send, not when the outbox starts (every start of the service).
  const { default: Composer } = await import('nodemailer/lib/mail-composer');
  const raw = await new Composer(mail).compile().build();
  return { raw, messageId, recipients, answering };
}
