/**
 * Retention policy (reference §4.4): how many whole sealed segments to delete from the head.
 * Never the active (last) segment; a segment's age is its newest record's timestamp, not the
 * file's mtime. Pure: the log runs it on its own timer and does the unlinks.
 */

export interface RetentionPolicy {
  maxBytes?: number;
  maxAgeMs?: number;
}

export interface RetentionCandidate {
  bytes: number;
  /** -1 when unknown: such a segment is never deleted for age. */
  newestTimestampMicros: number;
}

/** Count of segments to delete from the head, oldest first. */
export function segmentsToRetire(
  segments: readonly RetentionCandidate[],
  policy: RetentionPolicy,
  nowMicros: number,
): number {
  let total = 0;
  for (const s of segments) total += s.bytes;
  const ageLimitMicros =
    policy.maxAgeMs === undefined ? undefined : nowMicros - policy.maxAgeMs * 1000;
  let n = 0;
  while (n < segments.length - 1) {
    const s = segments[n]!;
    const overBytes = policy.maxBytes !== undefined && total > policy.maxBytes;
    const tooOld =
      ageLimitMicros !== undefined &&
      s.newestTimestampMicros >= 0 &&
      s.newestTimestampMicros < ageLimitMicros;
    if (!overBytes && !tooOld) break;
    total -= s.bytes;
    n++;
  }
  return n;
}
