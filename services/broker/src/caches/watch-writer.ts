/**
 * Serves one cache watch on a broker-opened uni stream: `event_stream_hello`, then a
 * `cache_event` per change in the shard's write order, and, when the watcher's queue overflowed,
 * `cache_watch_lagged {resume_from}` as the last frame before the stream ends. The watch stops
 * when its control stream or its event stream closes.
 */
import type { CacheChange, CacheWatch } from '@felix/storage';
import type { Connection, TransportStream } from '@felix/transport';
import { jsonFrame } from '../session/codec.js';
import type { ProjectionMetrics } from './projection-metrics.js';

export class WatchWriter {
  private stopped = false;
  private uni: TransportStream | null = null;

  constructor(
    private readonly conn: Connection,
    readonly id: number,
    private readonly watch: CacheWatch,
    private readonly metrics: ProjectionMetrics,
  ) {}

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.watch.close();
    this.uni?.reset(0);
  }

  async run(): Promise<void> {
    const m = this.metrics;
    m.watches.inc();
    m.watchesOpened.inc();
    try {
      const uni = await this.conn.openUni();
      this.uni = uni;
      if (this.stopped) {
        uni.reset(0);
        return;
      }
      void uni.closed.then(() => this.stop());
      await uni.write(jsonFrame({ type: 'event_stream_hello', subscription_id: this.id }));
      for await (const ev of this.watch) {
        if (this.stopped) return;
        if (ev.kind === 'lagged') {
          m.watchesLagged.inc();
          await uni.write(jsonFrame({ type: 'cache_watch_lagged', resume_from: ev.resumeFrom }));
          break;
        }
        await uni.write(encodeChange(ev.change));
        m.watchEvents.inc();
      }
      if (!this.stopped) await uni.end();
    } catch {
      // the watcher went away; nothing is owed to it
    } finally {
      this.stopped = true;
      this.watch.close();
      m.watches.dec();
    }
  }
}

/**
 * Every watcher of a change is handed the same change object, so its frame is encoded once and
 * shared: N watchers cost one JSON encoding, not N.
 */
const encoded = new WeakMap<CacheChange, Uint8Array>();

function encodeChange(c: CacheChange): Uint8Array {
  let bytes = encoded.get(c);
  if (bytes === undefined) {
    bytes = jsonFrame({
      type: 'cache_event',
      key: c.key,
      ...(c.op === 'put' && c.value !== undefined ? { value: c.value } : {}),
      offset: c.offset,
      expires_at_millis: c.expiresAtMillis,
    });
    encoded.set(c, bytes);
  }
  return bytes;
}
