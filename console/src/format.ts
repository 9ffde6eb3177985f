/** How the console writes times, durations, money and counts. */
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const integer = new Intl.NumberFormat();

/** Seconds since the epoch (as the API writes times) or an ISO string. */
export function formatTime(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : dateTime.format(date);
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** An exact decimal string in USD, shown to at most six decimals without rounding it through a float first. */
export function formatUsd(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const text = String(value);
  const [whole = '0', fraction = ''] = text.split('.');
  const shown = fraction.slice(0, 6).replace(/0+$/, '');
  return `$${whole}${shown ? `.${shown.padEnd(2, '0')}` : '.00'}`;
}

export const formatCount = (value: number | null | undefined) => (value === null || value === undefined ? '—' : integer.format(value));

const bytesUnits = ['bytes', 'KB', 'MB', 'GB'] as const;
/** A size in bytes, in decimal units (as the API's limits are written: 100 MB). */
export function formatBytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  let unit = 0;
  let shown = value;
  while (shown >= 1000 && unit < bytesUnits.length - 1) {
    shown /= 1000;
    unit++;
  }
  return unit === 0 ? `${integer.format(value)} bytes` : `${shown.toFixed(shown < 10 ? 1 : 0)} ${bytesUnits[unit]}`;
}

/** Milliseconds into a recording as m:ss.s (h:mm:ss past an hour). */
export function formatOffset(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const seconds = ms / 1000;
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = (seconds % 60).toFixed(1).padStart(4, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}
