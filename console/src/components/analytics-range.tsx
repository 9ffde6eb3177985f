/**
 * The range and bucket width of an analytics report, kept in the URL (`from`, `to` as UTC dates, both days
 * included; `width` 1d or 1h), so that a report is a link; and the form that changes them.
 */
import { useSearchParams } from 'wouter-preact';

export type BucketWidth = '1d' | '1h';
const DAY = 86_400;
const PRESETS = [7, 30, 90];

const isoDay = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
const secondsOf = (day: string) => Date.parse(`${day}T00:00:00Z`) / 1000;
const validDay = (day: string | null): day is string => day !== null && /^\d{4}-\d{2}-\d{2}$/.test(day) && Number.isFinite(secondsOf(day));

export interface ReportRange {
  from: string;
  to: string;
  width: BucketWidth;
  /** The first bucket's start and the range's end (exclusive), Unix seconds, as the API reads them. */
  startTime: number;
  endTime: number;
  days: number;
}

/** Today's UTC midnight, Unix seconds. */
export const todayStart = () => Math.floor(Date.now() / 1000 / DAY) * DAY;

export function useReportRange(defaultDays = 7): [ReportRange, URLSearchParams, (changes: Record<string, string | null>) => void] {
  const [params, setParams] = useSearchParams();
  const today = isoDay(todayStart());
  const to = validDay(params.get('to')) ? params.get('to')! : today;
  const from = validDay(params.get('from')) ? params.get('from')! : isoDay(secondsOf(to) - (defaultDays - 1) * DAY);
  const width: BucketWidth = params.get('width') === '1h' ? '1h' : '1d';
  const startTime = secondsOf(from);
  const endTime = secondsOf(to) + DAY;
  const change = (changes: Record<string, string | null>) =>
    setParams((previous) => {
      const next = new URLSearchParams(previous);
      for (const [key, value] of Object.entries(changes)) {
        if (value === null) next.delete(key);
        else next.set(key, value);
      }
      return next;
    });
  return [{ from, to, width, startTime, endTime, days: Math.round((endTime - startTime) / DAY) }, params, change];
}

/** The range picker: presets of the last 7, 30 or 90 days, both ends as dates, and the bucket width. */
export function RangePicker({ range, change }: { range: ReportRange; change: (changes: Record<string, string | null>) => void }) {
  const today = todayStart();
  const preset = (days: number) => ({ from: isoDay(today - (days - 1) * DAY), to: isoDay(today) });
  return (
    <div class="row analytics-range" role="group" aria-label="Range">
      {PRESETS.map((days) => {
        const { from, to } = preset(days);
        const current = range.from === from && range.to === to;
        return (
          <button key={days} type="button" class="plain" aria-pressed={current} onClick={() => change({ from, to })}>
            Last {days} days
          </button>
        );
      })}
      <div class="field">
        <label for="range-from">From</label>
        <input
          id="range-from"
          type="date"
          value={range.from}
          max={range.to}
          onChange={(e) => validDay(e.currentTarget.value) && change({ from: e.currentTarget.value })}
        />
      </div>
      <div class="field">
        <label for="range-to">To (included)</label>
        <input
          id="range-to"
          type="date"
          value={range.to}
          min={range.from}
          onChange={(e) => validDay(e.currentTarget.value) && change({ to: e.currentTarget.value })}
        />
      </div>
      <div class="field">
        <label for="range-width">Bucket</label>
        <select id="range-width" value={range.width} onChange={(e) => change({ width: e.currentTarget.value === '1h' ? '1h' : null })}>
          <option value="1d">One day</option>
          <option value="1h">One hour</option>
        </select>
      </div>
    </div>
  );
}

/** How a bucket's start is written: its UTC day, or day and hour. */
export function bucketLabel(start: number, width: BucketWidth): string {
  const iso = new Date(start * 1000).toISOString();
  return width === '1d' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}
