/**
 * The storage fault file's format (test only; docs/reliability.md, "Fault seams in the broker"):
 * `key=value` lines, `#` comments and blank lines ignored. Known keys: `fsync_delay_ms`
 * (integer ≥ 0), `fsync` (`ok`, `fail`, `fail_once`) and `generation` (integer). Parsing never
 * throws: a harness writing the file while it is read, or a typo, must not crash the process
 * under test, so what cannot be read is counted in `ignored` and otherwise left at its default.
 */
import { FAULT_FSYNC_DELAY_MS_MAX } from '../limits.js';

export const FSYNC_FAULTS = ['ok', 'fail', 'fail_once'] as const;
export type FsyncFault = (typeof FSYNC_FAULTS)[number];

export interface StorageFaults {
  /** Wait before each fdatasync of a segment file (capped at FAULT_FSYNC_DELAY_MS_MAX). */
  fsyncDelayMs: number;
  fsync: FsyncFault;
  /** `fail_once` fails the next fdatasync once per distinct generation. */
  generation: number;
}

export interface ParsedStorageFaults {
  faults: StorageFaults;
  /** Lines not understood: an unknown key, a value out of its range, a line without `=`. */
  ignored: number;
}

export const NO_STORAGE_FAULTS: StorageFaults = { fsyncDelayMs: 0, fsync: 'ok', generation: 0 };

function integer(value: string): number | null {
  if (!/^-?\d{1,15}$/.test(value)) return null;
  return Number(value);
}

/** Applies one `key=value` pair; false when it is not understood. */
function apply(out: StorageFaults, key: string, value: string): boolean {
  if (key === 'fsync_delay_ms') {
    const n = integer(value);
    if (n === null || n < 0) return false;
    out.fsyncDelayMs = Math.min(n, FAULT_FSYNC_DELAY_MS_MAX);
    return true;
  }
  if (key === 'fsync') {
    const mode = FSYNC_FAULTS.find((m) => m === value);
    if (mode === undefined) return false;
    out.fsync = mode;
    return true;
  }
  if (key === 'generation') {
    const n = integer(value);
    if (n === null) return false;
    out.generation = n;
    return true;
  }
  return false;
}

/** Parses the file's text; a later line for a key overrides an earlier one. */
export function parseStorageFaults(text: string): ParsedStorageFaults {
  const faults: StorageFaults = { ...NO_STORAGE_FAULTS };
  let ignored = 0;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0 || !apply(faults, line.slice(0, eq).trim(), line.slice(eq + 1).trim())) ignored++;
  }
  return { faults, ignored };
}
