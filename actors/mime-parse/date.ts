/**
 * The Date header to epoch ms. RFC 5322 dates and their common corruptions
 * are read by a tolerant pattern: day month year time zone, with 2- and
 * 3-digit years (and the Y2K-era "0102" meaning 2002) read as years since
 * 1900 (2-digit years below 50 as 20xx), "+-0500" read as -0500, named and
 * spelled-out US zones, and unknown zones as UTC. Other shapes fall back to
 * V8's `Date.parse`. Results outside 1970–2199 count as unreadable (null).
 *
 * Private to actors/mime-parse/.
 */

const MONTHS = 'janfebmaraprmayjunjulaugsepoctnovdec';
const ZONES: Record<string, number> = {
  ut: 0,
  utc: 0,
  gmt: 0,
  z: 0,
  wet: 0,
  bst: 60,
  cet: 60,
  met: 60,
  cest: 120,
  mest: 120,
  eet: 120,
  eest: 180,
  msk: 180,
  est: -300,
  edt: -240,
  cst: -360,
  cdt: -300,
  mst: -420,
  mdt: -360,
  pst: -480,
  pdt: -420,
  akst: -540,
  akdt: -480,
  hst: -600,
  jst: 540,
  kst: 540,
  hkt: 480,
  sgt: 480,
  aest: 600,
  aedt: 660,
  eastern: -300,
  central: -360,
  mountain: -420,
  pacific: -480,
  greenwich: 0,
};
const RFC = /(\d{1,2})[\s-]*([a-z]{3})[a-z]*\.?[\s-]*(\d{2,4})\s+(\d{1,2}):(\d{1,2})(?::(\d{1,2}))?\s*([+-]\s*[+-]?\d{3,4}|[a-z]+(?:\s+[a-z]+)*)?/i;
const MAX_MS = Date.UTC(2200, 0, 1);

function zoneMinutes(zone: string | undefined): number {
  if (!zone) return 0;
  const numeric = /^([+-])\s*([+-]?)(\d{3,4})$/.exec(zone);
  if (numeric) {
    const sign = numeric[2] === '-' || (numeric[1] === '-' && numeric[2] !== '+') ? -1 : 1;
    const digits = numeric[3]!.padStart(4, '0');
    return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)));
  }
  const words = zone.toLowerCase().split(/\s+/);
  const offset = ZONES[words[0]!] ?? 0;
  // "Eastern Daylight Time": daylight saving adds an hour to the standard offset.
  return words.length > 1 && words.includes('daylight') ? offset + 60 : offset;
}

function fullYear(digits: string): number {
  const year = Number(digits);
  if (digits.length === 2) return year < 50 ? 2000 + year : 1900 + year;
  return year < 1000 ? 1900 + year : year;
}

function rfcDate(text: string): number {
  const m = RFC.exec(text);
  if (!m) return Number.NaN;
  const month = MONTHS.indexOf(m[2]!.toLowerCase());
  if (month === -1 || month % 3 !== 0) return Number.NaN;
  const [day, hour, minute, second] = [Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return Number.NaN;
  const utc = Date.UTC(fullYear(m[3]!), month / 3, day, hour, minute, Math.min(second, 59));
  return utc - zoneMinutes(m[7]) * 60_000;
}

/** Epoch ms of a Date header, or null when absent, unreadable or outside 1970–2199. */
export function sentAt(value: string | null): number | null {
  if (!value) return null;
  const text = value
    .replace(/\([^)]*\)/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  let ms = rfcDate(text);
  if (Number.isNaN(ms)) ms = Date.parse(text);
  if (Number.isNaN(ms)) return null;
  return ms >= 0 && ms < MAX_MS ? ms : null;
}
