/**
 * Time spans as the spec writes them: `hh:mm:ss` (`00:01:00`), with an
 * optional day count in front (`1.00:00:00`) and optional milliseconds
 * behind (`00:00:00.250`). Parsed to milliseconds, the unit every consumer
 * of the configuration works in.
 *
 * `timeSpan(min, max, description)` builds the zod schema of one setting;
 * the caller adds `.prefault('00:01:00')` so the default is written (and
 * documented) in the same form an operator writes.
 */
import { z } from 'zod';

const PATTERN = /^(?:(\d{1,5})\.)?(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/;

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Milliseconds of a written span, or null when it is not one. */
export function parseTimeSpan(text: string): number | null {
  const m = PATTERN.exec(text);
  if (m === null) return null;
  const [, days, hours, minutes, seconds, fraction] = m;
  const h = Number(hours);
  const min = Number(minutes);
  const s = Number(seconds);
  if (h > 23 || min > 59 || s > 59) return null;
  const ms = fraction === undefined ? 0 : Number(fraction.padEnd(3, '0'));
  return Number(days ?? 0) * DAY + h * HOUR + min * MINUTE + s * SECOND + ms;
}

/** Writes milliseconds back in the configuration's own form. */
export function formatTimeSpan(ms: number): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const days = Math.floor(ms / DAY);
  let rest = ms - days * DAY;
  const h = Math.floor(rest / HOUR);
  rest -= h * HOUR;
  const m = Math.floor(rest / MINUTE);
  rest -= m * MINUTE;
  const s = Math.floor(rest / SECOND);
  const fraction = rest - s * SECOND;
  const clock = `${two(h)}:${two(m)}:${two(s)}${fraction > 0 ? `.${String(fraction).padStart(3, '0')}` : ''}`;
  return days > 0 ? `${days}.${clock}` : clock;
}

const FORMAT_MESSAGE = 'must be a time span written hh:mm:ss, with an optional day count in front (e.g. 00:01:00 or 1.00:00:00)';

/** A span setting bounded by `min` and `max`, both written as spans. */
export function timeSpan(min: string, max: string, description: string) {
  const lo = parseTimeSpan(min);
  const hi = parseTimeSpan(max);
  if (lo === null || hi === null) throw new Error(`bad span bounds ${min}..${max}`);
  return z
    .string({ error: FORMAT_MESSAGE })
    .superRefine((text, ctx) => {
      const ms = parseTimeSpan(text);
      if (ms === null) ctx.addIssue({ code: 'custom', message: FORMAT_MESSAGE });
      else if (ms < lo || ms > hi) {
        ctx.addIssue({ code: 'custom', message: `must be between ${min} and ${max} (was ${text})` });
      }
    })
    .transform((text) => parseTimeSpan(text) ?? 0)
    .meta({ description, type: 'time span', range: `${min} to ${max}` });
}
