/**
 * CPU time and memory of a process from Linux /proc (proc(5)): a server's CPU per operation is a
 * figure a shared machine disturbs less than a rate. Parsers are pure; readers are thin.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { ProcFormatError } from './errors.js';

/** USER_HZ: the unit of utime and stime in /proc/<pid>/stat (100 on every Linux we run). */
export const CLOCK_TICKS_PER_SECOND = 100;

/** A process's (or a thread's) CPU so far, in clock ticks. */
export interface ProcCpuTicks {
  utimeTicks: number;
  stimeTicks: number;
}

/**
 * utime and stime (fields 14 and 15) of a /proc/<pid>/stat line. The command name (field 2)
 * sits in parentheses and may itself hold spaces and ')', so fields are counted from the
 * last ')'.
 */
export function parseProcStat(text: string, file = 'stat'): ProcCpuTicks {
  const close = text.lastIndexOf(')');
  if (close < 0) throw new ProcFormatError(file, 'no ")" closing the command name');
  const fields = text.slice(close + 2).split(' ');
  const utimeTicks = Number(fields[11]);
  const stimeTicks = Number(fields[12]);
  if (!Number.isInteger(utimeTicks) || !Number.isInteger(stimeTicks)) {
    throw new ProcFormatError(file, 'utime and stime (fields 14 and 15) are not integers');
  }
  return { utimeTicks, stimeTicks };
}

/** User + system CPU seconds of a stat line (10 ms steps). */
export function statCpuSecs(text: string, file?: string): number {
  const t = parseProcStat(text, file);
  return (t.utimeTicks + t.stimeTicks) / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds (user + system) process `pid` has used so far. */
export function procCpuSecs(pid: number | 'self'): number {
  const file = `/proc/${pid}/stat`;
  return statCpuSecs(readFileSync(file, 'utf8'), file);
}

/**
 * CPU seconds of a process's threads, the main thread apart from the others (GC helpers, the
 * compiler, the thread pool). A thread that ends while we read is left out.
 */
export function threadCpuSecs(pid: number | 'self'): { main: number; others: number } {
  const dir = `/proc/${pid}/task`;
  const mainTid = String(pid === 'self' ? process.pid : pid);
  const out = { main: 0, others: 0 };
  for (const tid of readdirSync(dir)) {
    let text: string;
    try {
      text = readFileSync(`${dir}/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    out[tid === mainTid ? 'main' : 'others'] += statCpuSecs(text, `${dir}/${tid}/stat`);
  }
  return out;
}

/** A `Key: value` number of /proc/<pid>/status (kB for the Vm* keys); NaN when absent. */
export function statusField(text: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

/** Resident memory of `pid` now and at its peak, in MiB. */
export function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: statusField(status, 'VmRSS') / 1024, peak: statusField(status, 'VmHWM') / 1024 };
}

/** The first process whose command name is `comm` (say, the local nats-server), or null. */
export function pidNamed(comm: string): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) return Number(entry);
    } catch {
      // the process ended while we looked
    }
  }
  return null;
}
