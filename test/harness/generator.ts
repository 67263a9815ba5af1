/**
 * A seeded generator of large, realistic mailboxes: mixed sizes, text/HTML alternatives,
 * attachments, several charsets and transfer encodings, encoded-word headers, threads with
 * In-Reply-To/References and quoted text, mailing lists and newsletters, dates over years.
 * Same options and seed → the same bytes. Owns message structure; encoders are in
 * mime-encode.ts and vocabulary in generator-words.ts.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { seededRandom } from '../../runtime/clock.ts';
import { base64Lines, encodable, encodeText, encodeWords, header, quotedPrintable, type Charset } from './mime-encode.ts';
import * as W from './generator-words.ts';
import { type Folder, type MimeKind, type Planned, planRealistic } from './generator-shape.ts';

export type GeneratedMessage = {
  raw: Buffer;
  flags: string[];
  internalDate: Date;
  messageId: string;
  /** The subject as a reader sees it (decoded). */
  subject: string;
  inReplyTo?: string;
  attachments: number;
  /** `realistic` only: the folder the message belongs in, and its MIME kind (generator-shape.ts). */
  folder?: Folder;
  kind?: MimeKind;
};

export type GeneratorOptions = {
  seed: number;
  count: number;
  /**
   * `small` (default): ~5 KB average, no attachment over 60 KB, for fast tests. `bench`: ~63 KB average, up to 5 MB.
   * `realistic`: issue 34's measured shape (generator-shape.ts): sizes by percentile, MIME kinds and folders in stated shares.
   */
  profile?: 'small' | 'bench' | 'realistic';
  owner?: { name: string; address: string };
  /** Date headers are spread, in order, between these (defaults 2019-01-01 … 2025-12-31). */
  start?: Date;
  end?: Date;
  /** Share of messages that answer an earlier one (default 0.35). */
  replyRate?: number;
};

type Profile = {
  text: [number, number];
  /** Probabilities of one or more attachments of each size class, and their byte ranges. */
  smallAttach: number;
  smallRange: [number, number];
  largeAttach: number;
  largeRange: [number, number];
};

const PROFILES: Record<'small' | 'bench', Profile> = {
  small: { text: [150, 2_000], smallAttach: 0.06, smallRange: [2_000, 45_000], largeAttach: 0, largeRange: [0, 0] },
  bench: { text: [1_000, 14_000], smallAttach: 0.14, smallRange: [20_000, 250_000], largeAttach: 0.018, largeRange: [150_000, 5_000_000] },
};

const CRLF = Buffer.from('\r\n');
type AttachmentKind = 'pdf' | 'png' | 'jpeg' | 'zip' | 'docx' | 'csv' | 'ics';
const ATTACHMENT_KINDS: readonly AttachmentKind[] = ['pdf', 'pdf', 'pdf', 'png', 'jpeg', 'jpeg', 'zip', 'docx', 'csv', 'ics'];
/** `realistic`: binary types only past 150 KB (a CSV is capped at 200 KB of rows), and no calendar invitation (its size is fixed). */
const REALISTIC_ATTACHMENTS: readonly AttachmentKind[] = ['pdf', 'pdf', 'pdf', 'png', 'jpeg', 'jpeg', 'zip', 'docx', 'csv'];
const REALISTIC_LARGE_ATTACHMENTS: readonly AttachmentKind[] = ['pdf', 'pdf', 'pdf', 'png', 'jpeg', 'jpeg', 'zip', 'docx'];
/** `realistic`: what a message's header block weighs, about (Received hops, DKIM, addresses); its body is sized to the rest. */
const HEAD_GUESS = 1_500;
/** `realistic`: body bytes per byte of paragraph text, by kind (the HTML's markup; the second pass corrects the rest). */
const TEXT_FACTOR = { plain: 1.4, html: 2.3, alternative: 4.5 } as const;
/** Bytes of base64 (76-character lines and CRLF) per byte encoded. */
const BASE64_GROWTH = 78 / 57;
const ZONES = [0, 0, -300, -420, -480, 60, 60, 120, 330, 540, 600, -180];
const DAY = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MON = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 5322 date as seen in a zone `offset` minutes east of UTC. */
function rfcDate(t: number, offset: number): string {
  const d = new Date(t + offset * 60_000);
  const p = (n: number) => String(n).padStart(2, '0');
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${DAY[d.getUTCDay()]}, ${p(d.getUTCDate())} ${MON[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} ${sign}${p(Math.floor(abs / 60))}${p(abs % 60)}`;
}

/** A part's size as written: its header block, the blank line and its body. */
function partBytes(p: Part): number {
  return p.headers.length + 2 + p.body.reduce((n, b) => n + b.length, 0);
}

type Person = { name: string; address: string };
type Conversation = { subject: string; people: Person[]; last: string; references: string[]; snippet: string[]; lastAt: number; charset: Charset };
type Part = { headers: string; body: Buffer[] };

export function generateMailbox(options: GeneratorOptions): Iterable<GeneratedMessage> {
  return { [Symbol.iterator]: () => messages(options) };
}

function* messages(o: GeneratorOptions): Generator<GeneratedMessage> {
  const random = seededRandom(o.seed);
  const rnd = () => random.next();
  const int = (a: number, b: number) => a + Math.floor(rnd() * (b - a + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const chance = (p: number) => rnd() < p;
  const logUniform = (a: number, b: number) => Math.round(Math.exp(Math.log(a) + rnd() * (Math.log(b) - Math.log(a))));
  const hex = (n: number) => {
    let s = '';
    while (s.length < n)
      s += Math.floor(rnd() * 0x100000000)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, n);
  };
  const profile = PROFILES[o.profile === 'realistic' ? 'bench' : (o.profile ?? 'small')];
  // Its own stream, so the plan's shuffle leaves the messages' draws as they are.
  const plan = o.profile === 'realistic' ? planRealistic(o.count, seededRandom(o.seed ^ 0x5a5a5a5a)) : undefined;
  const owner = o.owner ?? { name: 'Alice Example', address: 'alice@example.org' };
  const start = (o.start ?? new Date('2019-01-01T00:00:00Z')).getTime();
  const end = (o.end ?? new Date('2025-12-31T23:59:59Z')).getTime();
  const replyRate = o.replyRate ?? 0.35;
  const key = createHash('sha256').update(`mailcairn-generator:${o.seed}`).digest().subarray(0, 16);
  let streamNo = 0;
  /** Deterministic, incompressible bytes (AES-CTR keystream) for attachment payloads. */
  const noise = (n: number): Buffer => {
    const iv = Buffer.alloc(16);
    iv.writeUInt32BE(streamNo++, 12);
    return createCipheriv('aes-128-ctr', key, iv).update(Buffer.alloc(n));
  };

  const people: Person[] = Array.from({ length: 60 }, () => {
    const japanese = chance(0.08);
    const name = japanese ? pick(W.JAPANESE_NAMES) : `${pick(W.FIRST_NAMES)} ${pick(W.LAST_NAMES)}`;
    const local = japanese
      ? `${pick(['yamada', 'sato', 'suzuki', 'tanaka'])}.${int(1, 99)}`
      : name
          .normalize('NFD')
          .replace(/[^A-Za-z ]/g, '')
          .toLowerCase()
          .replace(' ', '.');
    return { name, address: `${local}@${japanese ? 'example.jp' : pick(W.DOMAINS)}` };
  });
  const open: Conversation[] = [];
  const gap = (end - start) / Math.max(1, o.count);
  let t = start;

  const charsetFor = (): Charset => {
    const r = rnd();
    return r < 0.58 ? 'utf-8' : r < 0.7 ? 'us-ascii' : r < 0.83 ? 'iso-8859-1' : r < 0.96 ? 'windows-1252' : 'iso-2022-jp';
  };
  /** Header text in the message's charset if it fits there, else UTF-8. */
  const words = (text: string, charset: Charset): string => {
    const cs: Charset = charset !== 'us-ascii' && encodable(text, charset) ? charset : 'utf-8';
    return encodeWords(text, cs, cs === 'iso-8859-1' || cs === 'windows-1252' ? 'Q' : 'B');
  };
  const mailbox = (p: Person, charset: Charset) => {
    if (/^[A-Za-z0-9 .'-]*$/.test(p.name)) return `${/[.']/.test(p.name) ? `"${p.name}"` : p.name} <${p.address}>`;
    return `${words(p.name, charset)} <${p.address}>`;
  };
  const sentence = () => {
    const first = pick(W.WORDS);
    let s = first.charAt(0).toUpperCase() + first.slice(1);
    for (let n = int(5, 17); n > 0; n--) s += ` ${pick(W.WORDS)}`;
    return s + pick(['.', '.', '.', '?', '!']);
  };
  const foreign = (charset: Charset): string | undefined => {
    switch (charset) {
      case 'utf-8':
        return chance(0.25) ? pick([...W.UTF8_EXTRA, ...W.GERMAN, ...W.FRENCH, ...W.JAPANESE]) : undefined;
      case 'iso-8859-1':
        return chance(0.6) ? pick([...W.GERMAN, ...W.FRENCH, ...W.SPANISH]) : undefined;
      case 'windows-1252':
        return chance(0.5) ? pick(W.CP1252_ENGLISH) : undefined;
      case 'iso-2022-jp':
        return pick(W.JAPANESE);
      default:
        return undefined;
    }
  };
  /** Paragraphs totalling about `bytes`, lines wrapped at 72 (Japanese lines are short already). */
  const paragraphs = (bytes: number, charset: Charset): string[] => {
    const out: string[] = [];
    let size = 0;
    while (size < bytes) {
      const sentences: string[] = [];
      for (let i = int(2, 6); i > 0; i--) sentences.push(foreign(charset) ?? sentence());
      const para = sentences.join(' ');
      out.push(para);
      size += para.length + 2;
    }
    return out;
  };
  const wrap = (para: string): string[] => {
    const lines: string[] = [];
    let line = '';
    for (const w of para.split(' ')) {
      if (line && line.length + 1 + w.length > 72) {
        lines.push(line);
        line = w;
      } else line = line ? `${line} ${w}` : w;
    }
    if (line) lines.push(line);
    return lines;
  };
  const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

  /** A text part in `charset` with a transfer encoding a real mailer might pick. */
  const textPart = (subtype: 'plain' | 'html' | 'calendar' | 'csv', text: string, charset: Charset, extra = ''): Part => {
    const bytes = encodeText(text, charset);
    const ascii = /^[\x00-\x7f]*$/.test(text) && charset !== 'iso-2022-jp';
    let cte: string;
    if (charset === 'iso-2022-jp')
      cte = '7bit'; // JIS X 0208 in escape sequences is 7-bit already
    else if (ascii) cte = text.split('\r\n').some((l) => l.length > 990) ? 'quoted-printable' : '7bit';
    else if (charset === 'utf-8') cte = pick(['quoted-printable', 'quoted-printable', 'base64', '8bit']);
    else cte = chance(0.75) ? 'quoted-printable' : '8bit';
    const body = cte === 'base64' ? base64Lines(bytes) : cte === 'quoted-printable' ? quotedPrintable(bytes) : bytes;
    const headers = `Content-Type: text/${subtype}; charset="${charset}"${extra}\r\nContent-Transfer-Encoding: ${cte}\r\n`;
    const ends = body.length >= 2 && body[body.length - 2] === 13 && body[body.length - 1] === 10;
    return { headers, body: ends ? [body] : [body, CRLF] };
  };

  const multipart = (subtype: string, parts: Part[]): Part => {
    const boundary = `----=_Part_${hex(8)}_${hex(12)}`;
    const chunks: Buffer[] = chance(0.5) ? [Buffer.from('This is a multi-part message in MIME format.\r\n\r\n')] : [];
    for (const p of parts) chunks.push(Buffer.from(`--${boundary}\r\n${p.headers}\r\n`), ...p.body, CRLF);
    chunks.push(Buffer.from(`--${boundary}--\r\n`));
    return { headers: `Content-Type: multipart/${subtype};\r\n boundary="${boundary}"\r\n`, body: chunks };
  };

  const attachment = (size: number, charset: Charset, choices: readonly AttachmentKind[] = ATTACHMENT_KINDS): Part => {
    const kind = pick(choices);
    const baseName = pick(['report', 'invoice', 'scan', 'photo', 'slides', 'notes', 'Präsentation März', 'résumé', '請求書', 'budget 2024']);
    const types = {
      pdf: ['application/pdf', '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n'],
      png: ['image/png', '\x89PNG\r\n\x1a\n'],
      jpeg: ['image/jpeg', '\xff\xd8\xff\xe0\x00\x10JFIF\x00'],
      zip: ['application/zip', 'PK\x03\x04'],
      docx: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'PK\x03\x04'],
      csv: ['text/csv', ''],
      ics: ['text/calendar', ''],
    } as const;
    const [type, magic] = types[kind];
    const fileName = `${baseName}.${kind === 'jpeg' ? 'jpg' : kind}`;
    const ascii = /^[\x20-\x7e]*$/.test(fileName);
    const nameParams = ascii ? `; name="${fileName}"` : `; name="${encodeWords(fileName, 'utf-8', 'B')}"`;
    const disposition = ascii
      ? `Content-Disposition: attachment; filename="${fileName}"\r\n`
      : `Content-Disposition: attachment;\r\n filename*=utf-8''${encodeURIComponent(fileName)}\r\n`;
    if (kind === 'csv' || kind === 'ics') {
      let text: string;
      if (kind === 'csv') {
        const rows = ['date,item,amount'];
        for (let len = 0; len < Math.min(size, 200_000); len += rows.at(-1)!.length + 2)
          rows.push(`2024-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')},${pick(W.WORDS)},${int(1, 9999)}.${int(10, 99)}`);
        text = `${rows.join('\r\n')}\r\n`;
      } else {
        const uid = hex(16);
        text = [
          'BEGIN:VCALENDAR',
          'VERSION:2.0',
          'PRODID:-//Example//Calendar//EN',
          'METHOD:REQUEST',
          'BEGIN:VEVENT',
          `UID:${uid}@example.org`,
          'DTSTART:20240305T140000Z',
          'DTEND:20240305T150000Z',
          `SUMMARY:${pick(W.SUBJECT_TOPICS).replace(/\{[nm]\}/g, '1')}`,
          'END:VEVENT',
          'END:VCALENDAR',
          '',
        ].join('\r\n');
      }
      const part = textPart(
        kind === 'csv' ? 'csv' : 'calendar',
        text,
        charset === 'iso-2022-jp' ? 'utf-8' : charset === 'us-ascii' ? 'us-ascii' : 'utf-8',
        kind === 'ics' ? '; method=REQUEST' : nameParams,
      );
      return { headers: part.headers + disposition, body: part.body };
    }
    const data = Buffer.concat([Buffer.from(magic, 'latin1'), noise(Math.max(0, size - magic.length))]);
    return {
      headers: `Content-Type: ${type}${nameParams}\r\nContent-Transfer-Encoding: base64\r\n${disposition}`,
      body: [base64Lines(data)],
    };
  };

  for (let index = 0; index < o.count; index++) {
    const planned = plan?.(index);
    t = Math.min(end, t + Math.max(1000, Math.round(-Math.log(1 - rnd()) * gap)));
    const zone = pick(ZONES);
    let charset = charsetFor();
    let kind = chance(0.08) ? 'newsletter' : chance(0.2) ? 'list' : 'personal';
    if (planned?.folder === 'Sent') kind = 'personal';
    let parent: Conversation | undefined;
    if (kind !== 'newsletter' && chance(replyRate)) {
      const recent = open.slice(-40).filter((c) => t - c.lastAt < 60 * 86_400_000);
      if (recent.length > 0) parent = pick(recent);
    }
    if (parent) charset = chance(0.8) ? parent.charset : charset;

    let from: Person;
    let to: Person[];
    const cc: Person[] = [];
    let subject: string;
    const extraHeaders: string[] = [];
    const list = kind === 'list' ? pick(W.LISTS) : undefined;
    if (kind === 'newsletter') {
      from = pick(W.NEWSLETTERS);
      to = [owner];
      subject = `${pick(['Your weekly digest', 'New this month', 'Last chance:', 'Release notes for'])} ${pick(W.SUBJECT_TOPICS)
        .replace('{n}', String(int(1, 999)))
        .replace('{m}', String(int(0, 9)))}`;
      extraHeaders.push(
        header('List-Unsubscribe', `<https://${from.address.split('@')[1]}/unsubscribe?u=${hex(12)}>, <mailto:unsubscribe@${from.address.split('@')[1]}>`),
      );
      extraHeaders.push('List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n', 'Precedence: bulk\r\n');
    } else if (parent) {
      from = pick(parent.people.filter((p) => p.address !== owner.address).concat(pick(people)));
      to = [owner];
      for (const p of parent.people) if (p.address !== from.address && p.address !== owner.address && cc.length < 4) cc.push(p);
      const base = parent.subject;
      subject = chance(0.85) ? `${pick(['Re: ', 'Re: ', 'Re: ', 'RE: ', 'AW: ', 'Re: Re: '])}${base}` : `Fwd: ${base}`;
    } else {
      from = pick(people);
      to = chance(0.85) ? [owner] : [pick(people), owner];
      if (chance(0.3)) for (let i = int(1, 3); i > 0; i--) cc.push(pick(people));
      subject =
        charset === 'iso-2022-jp'
          ? pick(W.JAPANESE_SUBJECTS)
          : pick(W.SUBJECT_TOPICS)
              .replace('{n}', String(int(1000, 99999)))
              .replace('{m}', String(int(0, 9)));
      subject = subject.charAt(0).toUpperCase() + subject.slice(1);
      if (charset === 'iso-8859-1' && chance(0.4)) subject += pick([' – Rückfrage', ' (réunion)', ' für März', ' – año nuevo']).replace('–', '-');
      if (charset === 'utf-8' && chance(0.15)) subject += pick([' 🎉', ' — naïve café', ' (Überblick)', ' 件']);
    }
    if (list) {
      to = [{ name: list.title, address: `${list.name}@${list.domain}` }];
      if (!parent) subject = `[${list.name}] ${subject}`;
      extraHeaders.push(`List-Id: ${list.title} <${list.name}.${list.domain}>\r\n`, `List-Post: <mailto:${list.name}@${list.domain}>\r\n`);
      extraHeaders.push(header('List-Unsubscribe', `<mailto:${list.name}-leave@${list.domain}>`), 'Precedence: list\r\n');
    }
    if (planned?.folder === 'Sent') {
      // The owner's own mail: to the person who would have written, the thread's others on copy.
      to = [from];
      from = owner;
    }
    if (!encodable(subject, charset) && charset !== 'utf-8') charset = 'utf-8';

    const domain = from.address.split('@')[1]!;
    const messageId = `<${hex(16)}.${index}@${domain}>`;
    const references = parent ? [...parent.references.slice(-9), parent.last] : [];
    // Replies often answer the owner's own mail, which sits in Sent, not here.
    if (parent && chance(0.3)) references.push(`<${hex(12)}.sent@${owner.address.split('@')[1]}>`);
    const inReplyTo = references.at(-1);
    const deliveredAt = Math.floor((t + int(1, 600) * 1000) / 1000) * 1000;

    // Body text: paragraphs of about `bytes`, as plain text and (on demand) as HTML.
    const compose = (bytes: number) => {
      const paras = paragraphs(bytes, charset);
      const greeting = charset === 'iso-2022-jp' ? `${from.name.split(' ')[0]}様` : `Hi ${owner.name.split(' ')[0]},`;
      const lines: string[] = [greeting, ''];
      for (const p of paras) lines.push(...wrap(p), '');
      const signature = pick(W.SIGNATURES);
      lines.push(signature, from.name);
      if (parent) {
        lines.push('', `On ${rfcDate(parent.lastAt, zone)}, ${parent.people[0]!.name} wrote:`);
        for (const l of parent.snippet) lines.push(`> ${l}`);
      }
      let text = `${lines.join('\r\n')}\r\n`;
      if (!encodable(text, charset)) {
        charset = 'utf-8';
        text = `${lines.join('\r\n')}\r\n`;
      }
      const html = () => {
        const news = kind === 'newsletter';
        const body = paras.map(
          (p) => `<p style="margin:0 0 12px 0;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:20px;color:#333333;">${escapeHtml(p)}</p>`,
        );
        const blocks = news
          ? body
              .map(
                (p, i) =>
                  `<tr><td style="padding:16px 24px;border-bottom:1px solid #eeeeee;">${p}<a href="https://news.example.com/item/${i}?utm_source=newsletter&amp;utm_medium=email&amp;id=${hex(10)}" style="color:#1a73e8;text-decoration:none;">Read more</a></td></tr>`,
              )
              .join('\r\n')
          : body.join('\r\n');
        const content = news
          ? `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:640px;margin:0 auto;background:#ffffff;">\r\n${blocks}\r\n</table>`
          : `<div dir="ltr">\r\n<p>${escapeHtml(greeting)}</p>\r\n${blocks}\r\n<p>${escapeHtml(signature)}<br>${escapeHtml(from.name)}</p>\r\n</div>`;
        const quoted = parent
          ? `\r\n<blockquote type="cite" style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">${parent.snippet.map(escapeHtml).join('<br>\r\n')}</blockquote>`
          : '';
        return `<!DOCTYPE html>\r\n<html>\r\n<head>\r\n<meta http-equiv="Content-Type" content="text/html; charset=${charset}">\r\n<style type="text/css">body{margin:0;padding:0}p{margin:0}</style>\r\n</head>\r\n<body>\r\n${content}${quoted}\r\n</body>\r\n</html>\r\n`;
      };
      return { paras, text, html };
    };
    const plainOf = (c: ReturnType<typeof compose>) => textPart('plain', c.text, charset, chance(0.15) && charset !== 'iso-2022-jp' ? '; format=flowed' : '');

    /** `realistic`: the kind the plan names, its body sized so that the message comes to the planned size. */
    const realisticBody = (want: Planned): { root: Part; composed: ReturnType<typeof compose>; attachments: number } => {
      const budget = Math.max(300, want.size - HEAD_GUESS);
      if (want.kind === 'plain' || want.kind === 'html' || want.kind === 'alternative') {
        const textKind = want.kind;
        const build = (c: ReturnType<typeof compose>): Part =>
          textKind === 'plain'
            ? plainOf(c)
            : textKind === 'html'
              ? textPart('html', c.html(), charset)
              : multipart('alternative', [plainOf(c), textPart('html', c.html(), charset)]);
        let bytes = Math.max(100, budget / TEXT_FACTOR[textKind]);
        let composed = compose(bytes);
        let root = build(composed);
        // One correction: the transfer encoding (base64, quoted-printable) and the markup are known only once built.
        const got = partBytes(root);
        if (Math.abs(got - budget) > budget * 0.08) {
          bytes = Math.max(100, (bytes * budget) / got);
          composed = compose(bytes);
          root = build(composed);
        }
        return { root, composed, attachments: 0 };
      }
      const composed = compose(int(300, 3_000));
      const inner = chance(0.5) ? plainOf(composed) : multipart('alternative', [plainOf(composed), textPart('html', composed.html(), charset)]);
      // What the attachments must weigh once encoded, less their part headers (~300 bytes each).
      const fill = Math.max(1_000, budget - partBytes(inner) - 200);
      const encoded =
        want.kind === 'large-attachment'
          ? chance(0.7)
            ? [fill]
            : [fill * 0.9, fill * 0.1]
          : chance(0.7)
            ? [fill]
            : (() => {
                const shares = Array.from({ length: int(2, 3) }, () => 0.2 + rnd());
                const sum = shares.reduce((a, b) => a + b, 0);
                return shares.map((x) => (fill * x) / sum);
              })();
      const parts = encoded.map((e) => {
        const raw = Math.max(200, Math.round((e - 300) / BASE64_GROWTH));
        return attachment(raw, charset, raw > 150_000 ? REALISTIC_LARGE_ATTACHMENTS : REALISTIC_ATTACHMENTS);
      });
      return { root: multipart('mixed', [inner, ...parts]), composed, attachments: parts.length };
    };

    let root: Part;
    let composed: ReturnType<typeof compose>;
    let attachments = 0;
    if (planned) {
      const built = realisticBody(planned);
      root = built.root;
      composed = built.composed;
      attachments = built.attachments;
    } else {
      composed = compose(logUniform(profile.text[0], profile.text[1]));
      const plain = plainOf(composed);
      const wantsHtml = kind === 'newsletter' || chance(0.45);
      if (!wantsHtml) root = plain;
      else if (kind === 'newsletter' && chance(0.3)) root = textPart('html', composed.html(), charset);
      else root = multipart('alternative', [plain, textPart('html', composed.html(), charset)]);
      if (wantsHtml && root.headers.startsWith('Content-Type: multipart/alternative') && chance(0.08)) {
        const cid = `${hex(12)}@${domain}`;
        const logo = attachment(int(2_000, 20_000), charset);
        root = multipart('related', [
          root,
          { headers: `${logo.headers.replace(/Content-Disposition: attachment/, 'Content-Disposition: inline')}Content-ID: <${cid}>\r\n`, body: logo.body },
        ]);
      }
      const sizes: number[] = [];
      if (chance(profile.largeAttach)) sizes.push(logUniform(profile.largeRange[0], profile.largeRange[1]));
      if (chance(profile.smallAttach))
        for (let i = chance(0.7) ? 1 : int(2, 3); i > 0; i--) sizes.push(logUniform(profile.smallRange[0], profile.smallRange[1]));
      if (sizes.length > 0) {
        attachments = sizes.length;
        root = multipart('mixed', [root, ...sizes.map((s) => attachment(s, charset))]);
      }
    }
    const paras = composed.paras;

    // Headers, outermost hop first.
    const received = rfcDate(deliveredAt, 0);
    const hops: string[] = [];
    for (let i = int(1, 3); i > 0; i--) {
      hops.push(
        header(
          'Received',
          `from mx${int(1, 9)}.${domain} (mx${int(1, 9)}.${domain} [203.0.113.${int(1, 254)}]) by mail.${owner.address.split('@')[1]} (Postfix) with ESMTPS id ${hex(10).toUpperCase()} for <${owner.address}>; ${received}`,
        ),
      );
    }
    const head: string[] = [
      `Return-Path: <${kind === 'list' ? `${list!.name}-bounces@${list!.domain}` : from.address}>\r\n`,
      `Delivered-To: ${owner.address}\r\n`,
      ...hops,
    ];
    if (chance(0.5)) {
      head.push(
        header(
          'DKIM-Signature',
          `v=1; a=rsa-sha256; c=relaxed/relaxed; d=${domain}; s=s${int(1, 3)}; t=${Math.floor(t / 1000)}; h=from:to:subject:date:message-id:mime-version; bh=${Buffer.from(hex(32), 'hex').toString('base64')}; b=${noise(
            256,
          )
            .toString('base64')
            .replace(/(.{70})/g, '$1 ')}`,
        ),
      );
    }
    head.push(header('From', mailbox(from, charset)));
    head.push(header('To', to.map((p) => mailbox(p, charset)).join(', ')));
    if (cc.length) head.push(header('Cc', cc.map((p) => mailbox(p, charset)).join(', ')));
    head.push(header('Subject', words(subject, charset)));
    head.push(`Date: ${rfcDate(t, zone)}\r\n`, `Message-ID: ${messageId}\r\n`);
    if (inReplyTo) {
      head.push(`In-Reply-To: ${inReplyTo}\r\n`);
      head.push(header('References', references.join(' ')));
    }
    head.push('MIME-Version: 1.0\r\n', ...extraHeaders);
    head.push(chance(0.5) ? `User-Agent: ${pick(W.MAILERS)}\r\n` : `X-Mailer: ${pick(W.MAILERS)}\r\n`);
    head.push(root.headers);
    const raw = Buffer.concat([Buffer.from(head.join(''), 'utf8'), CRLF, ...root.body]);

    // Threads and flags.
    const snippet = paras.slice(0, 2).flatMap(wrap).slice(0, 6);
    if (parent) {
      parent.last = messageId;
      parent.references = references;
      parent.snippet = snippet;
      parent.lastAt = t;
      if (!parent.people.some((p) => p.address === from.address)) parent.people.push(from);
    } else if (kind !== 'newsletter') {
      open.push({ subject, people: [from, ...cc], last: messageId, references: [], snippet, lastAt: t, charset });
      if (open.length > 200) open.shift();
    }
    const age = (end - t) / Math.max(1, end - start);
    const flags: string[] = [];
    if (chance(age < 0.03 ? 0.4 : 0.92) || planned?.folder === 'Sent') flags.push('\\Seen');
    if (kind === 'personal' && chance(0.1)) flags.push('\\Answered');
    if (chance(0.03)) flags.push('\\Flagged');
    if (chance(0.02)) flags.push('$Forwarded');
    if (chance(0.02)) flags.push(pick(['$Label1', 'Work', 'Later']));
    if (chance(0.01)) flags.push('$MDNSent');
    yield {
      raw,
      flags,
      internalDate: new Date(deliveredAt),
      messageId,
      subject,
      ...(inReplyTo ? { inReplyTo } : {}),
      attachments,
      ...(planned ? { folder: planned.folder, kind: planned.kind } : {}),
    };
  }
}
