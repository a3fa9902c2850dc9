/** Parsing of the data verbs' arguments (counts, durations, start positions) and value output. */
import { UsageError } from './report.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

export function intArg(name: string, text: string, min = 0): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${name} ${text} is not an integer of at least ${min}`);
  return n;
}

/**
 * A commander option parser for a count (`--shards`, `--ttl`): digits only, at least `min`.
 * Anything else is a usage error (exit 2) before a request is sent; `Number` would have turned
 * `abc` into NaN, sent as null.
 */
export function wholeNumber(flag: string, min = 1): (text: string) => number {
  return (text) => {
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min)
      throw new UsageError(`${flag} '${text}' is not a whole number of at least ${min}`);
    return n;
  };
}

/** A whole number as `wholeNumber` reads it, or `none` (kept as the string: commander does not
 *  keep a null an option parser returns; `orNull` reads it). */
export function wholeNumberOrNone(flag: string): (text: string) => number | 'none' {
  const n = wholeNumber(flag);
  return (text) => (text === 'none' ? 'none' : n(text));
}

/** A `wholeNumberOrNone` option's value for a request body: `none` is null. */
export function orNull(v: unknown): unknown {
  return v === 'none' ? null : v;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration like `500ms`, `30s`, `5m`, `2h`, `1d` (a bare number is ms), in ms. */
export function durationMs(name: string, text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text);
  if (!m) throw new UsageError(`${name} ${text} is not a duration`, 'e.g. 500ms, 30s, 5m, 2h, 1d');
  return Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!;
}

export type From = 'earliest' | 'latest' | number | { time: Date };

/** `--from`: earliest, latest, an offset, an ISO time or an age (`5m`: five minutes ago). */
export function parseFrom(text: string, now = Date.now()): From {
  if (text === 'earliest' || text === 'latest') return text;
  if (/^\d+$/.test(text)) return intArg('--from', text);
  if (/^\d+(ms|s|m|h|d)$/.test(text)) return { time: new Date(now - durationMs('--from', text)) };
  const t = Date.parse(text);
  if (Number.isNaN(t))
    throw new UsageError(
      `--from ${text} is not a start position`,
      'earliest, latest, an offset, an ISO time (2026-01-02T03:04:05Z) or an age (5m)',
    );
  return { time: new Date(t) };
}

/** A value as text when it is UTF-8, else base64 (JSON says which). */
export function valueFields(bytes: Uint8Array): { value: string } | { value_base64: string } {
  try {
    return { value: UTF8.decode(bytes) };
  } catch {
    // Not UTF-8: shown as base64 instead of mangled.
    return { value_base64: Buffer.from(bytes).toString('base64') };
  }
}

/** A value for a terminal line: the text, or `base64:...` when it is not UTF-8. */
export function valueText(bytes: Uint8Array): string {
  const v = valueFields(bytes);
  return 'value' in v ? v.value : `base64:${v.value_base64}`;
}

/** µs since the epoch as an ISO time; null when the broker sent none. */
export function isoOfMicros(us: number | undefined): string | null {
  return us === undefined ? null : new Date(Math.floor(us / 1000)).toISOString();
}
