// Shared helpers for projection tests: a clock tests move by hand, byte helpers, and a drain
// that collects watch events until a condition holds.
import type { CacheWatch, WatchEvent } from '../../src/cache/watch.js';

export class ManualClock {
  constructor(public ms = 1_700_000_000_000) {}
  now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();
export const bytes = (s: string): Uint8Array => enc.encode(s);
export const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : dec.decode(b);

/** Pulls events from a watch in the background; `events` grows as they arrive. */
export function collect(watch: CacheWatch): { events: WatchEvent[]; done: Promise<void> } {
  const events: WatchEvent[] = [];
  const done = (async () => {
    for await (const ev of watch) events.push(ev);
  })();
  return { events, done };
}

/** The change events of a collected list as `key=value@offset` / `key-@offset` strings. */
export function describeChanges(events: WatchEvent[]): string[] {
  return events.map((ev) =>
    ev.kind === 'lagged'
      ? `lagged@${ev.resumeFrom}`
      : ev.change.op === 'put'
        ? `${ev.change.key}=${text(ev.change.value)}@${ev.change.offset}`
        : `${ev.change.key}-@${ev.change.offset}`,
  );
}
