/**
 * When a schedule fires, as its Temporal Schedule reckons it: the checks a `cron` expression and a time zone
 * pass before Temporal is given them, and the next times, worked out here so that reading a schedule needs no
 * call to Temporal. Temporal matches a day when both the day of month and the day of week match, and counts
 * intervals from the Unix epoch; so does this.
 */
import { Cron } from 'croner';
import { TIMEZONE_NAMES } from './timezone-names.js';

/**
 * What Temporal's cron strings and this module agree on: five fields, each a list of `*`, numbers or three-letter
 * names (`mon`, `jan`), ranges of them, and steps. Not `L`, `W`, `#` or `?`, which Temporal refuses.
 */
const ATOM = '(\\*|[0-9]{1,2}|[A-Za-z]{3})';
// An item of a field: its start, its end (a range) and its step, captured.
const PART = `${ATOM}(?:-${ATOM})?(?:/([0-9]{1,2}))?`;
const CRON_FIELD = new RegExp(`^${PART}(?:,${PART})*$`);
const CRON_ITEM = new RegExp(`^${PART}$`);

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

/** The time zone database's names by their lower case: a name given in another case is taken as it spells it. */
const TIMEZONES_BY_LOWER_CASE = new Map(TIMEZONE_NAMES.map((name) => [name.toLowerCase(), name]));

/**
 * `timezone` spelt as the IANA time zone database spells it (`europe/paris` → `Europe/Paris`), or null when it is
 * none of its names, or one this process cannot reckon times in. Temporal looks the name up as it is spelt.
 */
export function timezoneNamed(timezone: string): string | null {
  const named = TIMEZONES_BY_LOWER_CASE.get(timezone.toLowerCase());
  if (named === undefined) return null;
  try {
    new Intl.DateTimeFormat('en', { timeZone: named });
    return named;
  } catch {
    return null;
  }
}

const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** A day of the week by number (0 to 7, both Sunday) or name, or null. */
function dayOf(atom: string): number | null {
  const named = DAY_NAMES.indexOf(atom.toLowerCase());
  if (named >= 0) return named;
  return /^[0-9]+$/.test(atom) && Number(atom) <= 7 ? Number(atom) : null;
}

/**
 * The days of the week (0, Sunday, to 6) a cron expression's fifth field names, or null when it is not one of
 * numbers, names, ranges and steps that go forwards (cronProblem then says why). A range that ends on `sun` ends
 * on day 7 (`mon-sun` is every day), but for one from Sunday, which is Sunday alone.
 */
function daysOfWeek(field: string): Set<number> | null {
  const days = new Set<number>();
  for (const item of field.split(',')) {
    const [, from, to, by] = CRON_ITEM.exec(item) ?? [];
    if (from === undefined) return null;
    const step = by === undefined ? 1 : Number(by);
    const start = from === '*' ? 0 : dayOf(from);
    let end = from === '*' ? 6 : to === undefined ? start : dayOf(to);
    // A step needs a range to step through: `*/2` or `1-5/2`, not `1/2`.
    if (
      start === null ||
      end === null ||
      step < 1 ||
      (from === '*' && to !== undefined) ||
      (by !== undefined && from !== '*' && to === undefined)
    )
      return null;
    if (to?.toLowerCase() === 'sun' && start !== 0) end = 7;
    if (end < start) return null;
    for (let day = start; day <= end; day += step) days.add(day % 7);
  }
  return days;
}

/**
 * `cron` as it is given to Temporal and read here alike: its days of the week written out as a list (`1-5` as
 * `1,2,3,4,5`). Temporal reads some ranges otherwise than the cron convention (`1-7` without Sunday, `mon-sun`
 * refused as ending before it starts); a list it reads as written. Other fields are given as written.
 */
export function temporalCron(cron: string): string {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 || fields[4] === '*') return fields.join(' ');
  const days = daysOfWeek(fields[4]!);
  if (days === null || days.size === 0) return fields.join(' ');
  fields[4] = [...days].sort((a, b) => a - b).join(',');
  return fields.join(' ');
}

const cronOf = (cron: string, timezone: string) =>
  new Cron(temporalCron(cron), { timezone, paused: true, mode: '5-part', domAndDow: true });

export type ScheduleTiming = { cron: string; timezone: string } | { intervalSeconds: number };

/** The next `count` times after `from`. */
export function nextTimes(timing: ScheduleTiming, count: number, from = new Date()): Date[] {
  if ('cron' in timing) return cronOf(timing.cron, timing.timezone).nextRuns(count, from);
  const every = timing.intervalSeconds * 1000;
  const first = Math.floor(from.getTime() / every) * every + every;
  return Array.from({ length: count }, (_, i) => new Date(first + i * every));
}
