/**
 * The timer a consume loop (group-consume.ts) and a merged loop over every shard
 * (stream-group.ts) keep over records they hold for a later turn: one timer, at the earliest
 * moment one of them reaches the hold bound. No I/O of its own.
 */

/** Clears `timer` and arms `fire` at `dueMs` (a performance.now() time); none when nothing is
 *  due (Infinity). Unref'd: a held record must not keep a process running. */
export function rearmHold(
  timer: ReturnType<typeof setTimeout> | undefined,
  dueMs: number,
  fire: () => void,
): ReturnType<typeof setTimeout> | undefined {
  clearTimeout(timer);
  if (dueMs === Number.POSITIVE_INFINITY) return undefined;
  const next = setTimeout(fire, Math.max(0, dueMs - performance.now()));
  next.unref?.();
  return next;
}
