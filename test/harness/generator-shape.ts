/**
 * The `realistic` profile's shape (issue 34): what size, MIME kind and folder
 * each message gets, drawn so that a whole mailbox has the distribution a
 * real one measured outside the project had. Sizes are not drawn at random
 * but by rank: a seeded permutation of the quantiles 0 … 1 is walked, so
 * the percentiles (and the maximum) hold at any count, and a message's kind
 * follows from its rank (the largest 1% carry a large attachment, the next
 * 17% attachments), as in real mail where the tail is attachments.
 * generator.ts builds the message to the planned size.
 */
import type { Random } from '../../runtime/clock.ts';

const KIB = 1024;

/** (quantile, bytes) points of the message size distribution: p10 4 KB, p50 10 KB, p75 22 KB, p90 90 KB, p95 190 KB, p99 1.1 MB, max 4.9 MB. */
export const REALISTIC_SIZE_POINTS: readonly (readonly [number, number])[] = [
  [0, 2 * KIB],
  [0.1, 4 * KIB],
  [0.5, 10 * KIB],
  [0.75, 22 * KIB],
  [0.9, 90 * KIB],
  [0.95, 190 * KIB],
  [0.99, 1100 * KIB],
  [1, 4900 * KIB],
];

/**
 * Between two points the size is log-uniform, bent toward the lower point in
 * the two upper segments (exponent > 1): real tails thin out, and straight
 * log-uniform there gives 690 MB and 128 messages over 1 MB for 10,000
 * instead of the measured 630 MB and about 105. With these, 10,000 planned
 * sizes total ≈ 621 MB (10^6) with 109 over 1 MiB.
 */
const SEGMENT_BEND = [1, 1, 1, 1, 1, 2, 1.2];

/** The planned size, in bytes, of the message at quantile `u` (0 … 1). */
export function realisticSize(u: number): number {
  for (let i = 1; i < REALISTIC_SIZE_POINTS.length; i++) {
    const [q0, a] = REALISTIC_SIZE_POINTS[i - 1]!;
    const [q1, b] = REALISTIC_SIZE_POINTS[i]!;
    if (u <= q1) {
      const t = (u - q0) / (q1 - q0);
      return Math.round(a * (b / a) ** (t ** SEGMENT_BEND[i - 1]!));
    }
  }
  return REALISTIC_SIZE_POINTS.at(-1)![1];
}

export type MimeKind = 'plain' | 'alternative' | 'html' | 'attachments' | 'large-attachment';
export type Folder = 'INBOX' | 'Archive' | 'Sent';

/** Shares of the kinds: 35% plain, 32% multipart/alternative, 15% HTML only, 17% with attachments, 1% large attachments. */
export const REALISTIC_KIND_SHARES: Readonly<Record<MimeKind, number>> = {
  plain: 0.35,
  alternative: 0.32,
  html: 0.15,
  attachments: 0.17,
  'large-attachment': 0.01,
};
/** Shares of the folders: 60% INBOX, 30% Archive, 10% Sent. */
export const REALISTIC_FOLDER_SHARES: Readonly<Record<Folder, number>> = { INBOX: 0.6, Archive: 0.3, Sent: 0.1 };

export type Planned = { size: number; kind: MimeKind; folder: Folder };

/** The plan of a `count`-message mailbox, one entry a message, in order. Holds `count` numbers (50,000 are 400 KB). */
export function planRealistic(count: number, random: Random): (index: number) => Planned {
  const rank = Uint32Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1));
    [rank[i], rank[j]] = [rank[j]!, rank[i]!];
  }
  const textShare = REALISTIC_KIND_SHARES.plain + REALISTIC_KIND_SHARES.alternative + REALISTIC_KIND_SHARES.html;
  const large = 1 - REALISTIC_KIND_SHARES['large-attachment'];
  const attached = large - REALISTIC_KIND_SHARES.attachments;
  return (index) => {
    const u = count === 1 ? 0.5 : rank[index]! / (count - 1);
    let kind: MimeKind;
    if (u >= large) kind = 'large-attachment';
    else if (u >= attached) kind = 'attachments';
    else {
      const r = random.next() * textShare;
      kind = r < REALISTIC_KIND_SHARES.plain ? 'plain' : r < REALISTIC_KIND_SHARES.plain + REALISTIC_KIND_SHARES.alternative ? 'alternative' : 'html';
    }
    const f = random.next();
    const folder: Folder =
      f < REALISTIC_FOLDER_SHARES.INBOX ? 'INBOX' : f < REALISTIC_FOLDER_SHARES.INBOX + REALISTIC_FOLDER_SHARES.Archive ? 'Archive' : 'Sent';
    return { size: realisticSize(u), kind, folder };
  };
}
