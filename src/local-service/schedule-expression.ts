import { CronExpressionParser } from 'cron-parser';

/**
 * A version's `scheduleExpression` (docs/api.md#triggers): a cron expression of 5 fields
 * (minute hour day-of-month month day-of-week) or 6 (a seconds field first), or one of the
 * parser's `@` macros, optionally preceded by a time zone as `TZ=Area/City ` (or `CRON_TZ=`, the
 * spelling of cronie and other crons). Without one the expression is read in UTC.
 *
 * It is parsed with `cron-parser`, the parser BullMQ's job schedulers use, so an expression the
 * API accepts is one the scheduler reads the same way.
 */

export interface ParsedSchedule {
  /** The cron part, as BullMQ's `pattern`. */
  pattern: string;
  /** IANA time zone, as BullMQ's `tz`. */
  tz: string;
}

export type ScheduleCheck = { ok: true; schedule: ParsedSchedule } | { ok: false; msg: string; type: string };

/** The shortest interval between two runs unless the test-only override is on: once a minute. */
export const SCHEDULE_FLOOR_MS = 60_000;

const TZ_PREFIX = /^(?:CRON_TZ|TZ)=(\S+)\s+/;

export function parseScheduleExpression(expression: string, opts: { allowEverySecond?: boolean } = {}): ScheduleCheck {
  const text = expression.trim();
  let pattern = text;
  let tz = 'UTC';
  const prefix = TZ_PREFIX.exec(text);
  if (prefix) {
    tz = prefix[1] as string;
    pattern = text.slice(prefix[0].length).trim();
    if (!isTimeZone(tz)) return { ok: false, msg: `unknown time zone "${tz}" (use an IANA name such as Europe/Paris)`, type: 'schedule_time_zone' };
  }
  if (pattern === '') return { ok: false, msg: 'empty cron expression', type: 'schedule_invalid' };
  if (!pattern.startsWith('@')) {
    const fields = pattern.split(/\s+/).length;
    if (fields !== 5 && fields !== 6) {
      return {
        ok: false,
        msg: `a cron expression has 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); this one has ${fields}`,
        type: 'schedule_invalid',
      };
    }
  }
  let seconds: readonly number[];
  try {
    const interval = CronExpressionParser.parse(pattern, { tz, currentDate: new Date() });
    seconds = interval.fields.second.values;
    // An expression whose days never exist (30 February) is refused by the parser at once or
    // when asked for its next run.
    interval.next();
  } catch (error) {
    return { ok: false, msg: `not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`, type: 'schedule_invalid' };
  }
  // The seconds field decides the floor exactly: with one second value every run is in a
  // different minute (at least 60 s apart); with two or more, two runs fall within one minute.
  if (!opts.allowEverySecond && seconds.length > 1) {
    return {
      ok: false,
      msg: `runs ${seconds.length} times a minute (seconds field); the shortest interval allowed is ${SCHEDULE_FLOOR_MS / 1000} s: name one second, or use 5 fields`,
      type: 'schedule_too_frequent',
    };
  }
  return { ok: true, schedule: { pattern, tz } };
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
