/** Another process's resident memory and CPU time, read from /proc/<pid> (Linux). */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const MB = 1024 * 1024;
// /proc reports CPU times in USER_HZ ticks, which Linux fixes at 100 a second.
const TICK_MS = 10;

function statusField(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
  if (kib === undefined) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(kib) * 1024;
}

/** User plus system CPU time the process has used so far, in milliseconds. */
export function cpuMs(pid: number): number {
  // The fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

export interface RssWatch {
  /** Stops sampling; the peak is the larger of the samples and the kernel's high-water mark. */
  stop(): { beforeMb: number; peakMb: number; growthMb: number };
}

/**
 * Samples VmRSS every `intervalMs` from now on. The kernel's high-water mark (VmHWM) is reset first when
 * /proc allows it (writing 5 to clear_refs), so a spike between two samples is still counted.
 */
export function watchRss(pid: number, intervalMs = 20): RssWatch {
  const before = statusField(pid, 'VmRSS');
  let peakResettable = true;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    peakResettable = false;
  }
  let peak = before;
  const sample = () => {
    peak = Math.max(peak, statusField(pid, 'VmRSS'));
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      if (peakResettable) peak = Math.max(peak, statusField(pid, 'VmHWM'));
      return { beforeMb: before / MB, peakMb: peak / MB, growthMb: (peak - before) / MB };
    },
  };
}

/** The machine's CPU time so far (every core), busy and in all, in milliseconds, from /proc/stat. */
export function machineCpuMs(): { busy: number; total: number } {
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  const idle = fields[3]! + fields[4]!;
  return { busy: (total - idle) * TICK_MS, total: total * TICK_MS };
}

/**
 * CPU time so far of every process descended from `rootPid` (not itself), by pid, with its command name;
 * reaped children's time is counted with their parent's (PostgreSQL's backends with the postmaster).
 */
export function descendantsCpuMs(rootPid: number): Map<number, { name: string; ms: number }> {
  const all = new Map<number, { ppid: number; name: string; ms: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // it ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    // state ppid … utime(14) stime(15) cutime(16) cstime(17), counted from the pid as field 1.
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    all.set(Number(entry), { ppid: Number(fields[1]), name, ms: ticks * TICK_MS });
  }
  const found = new Map<number, { name: string; ms: number }>();
  const isDescendant = (pid: number): boolean => {
    for (let at = all.get(pid)?.ppid; at !== undefined && at > 0; at = all.get(at)?.ppid) if (at === rootPid) return true;
    return false;
  };
  for (const [pid, { name, ms }] of all) if (isDescendant(pid)) found.set(pid, { name, ms });
  return found;
}
