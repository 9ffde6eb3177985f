/**
 * When a schedule fires, as its Temporal Schedule reckons it: the checks a `cron` expression and a time zone
 * pass before Temporal is given them, and the next times, worked out here so that reading a schedule needs no
 * call to Temporal. Temporal matches a day when both the day of month and the day of week match, and counts
 * intervals from the Unix epoch; so does this.
 */
import { Cron } from 'croner';

/**
 * What Temporal's cron strings and this module agree on: five fields, each a list of `*`, numbers or three-letter
 * names (`mon`, `jan`), ranges of them, and steps. Not `L`, `W`, `#` or `?`, which Temporal refuses.
 */
const ATOM = '(\\*|[0-9]{1,2}|[A-Za-z]{3})';
const PART = `${ATOM}(-${ATOM})?(/[0-9]{1,2})?`;
const CRON_FIELD = new RegExp(`^${PART}(,${PART})*$`);
const TIMEZONE = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** Why `cron` is not an expression schedules take, or null when it is. */
export function cronProblem(cron: string): string | null {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5)
    return `a cron expression has five fields (minute, hour, day of month, month, day of week); this has ${fields.length}.`;
  const bad = fields.find((field) => !CRON_FIELD.test(field));
  if (bad !== undefined) return `the field ${JSON.stringify(bad)} is not a number, a name, \`*\`, a range, a list or a step.`;
  try {
    // A date no month has (30 February) is a valid field each, and a schedule that would never run.
    if (cronOf(cron, 'UTC').nextRun() === null) return 'it names no day that exists (such as 30 February), so it would never run.';
  } catch (err) {
    return `${(err as Error).message.replace(/^CronPattern: /, '')}.`;
  }
  return null;
}

/** Whether `timezone` is an IANA time zone name this process (and so Temporal's tz database) knows. */
export function isKnownTimezone(timezone: string): boolean {
  if (!TIMEZONE.test(timezone)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

const cronOf = (cron: string, timezone: string) => new Cron(cron.trim(), { timezone, paused: true, mode: '5-part', domAndDow: true });

export type ScheduleTiming = { cron: string; timezone: string } | { intervalSeconds: number };

/** The next `count` times after `from`. */
export function nextTimes(timing: ScheduleTiming, count: number, from = new Date()): Date[] {
  if ('cron' in timing) return cronOf(timing.cron, timing.timezone).nextRuns(count, from);
  const every = timing.intervalSeconds * 1000;
  const first = Math.floor(from.getTime() / every) * every + every;
  return Array.from({ length: count }, (_, i) => new Date(first + i * every));
}
