/**
 * Serves one subscription on a broker-opened uni stream: `event_stream_hello`, then history
 * `[start, live)` under backpressure (never dropped), then the live queue. Live batches go out as
 * the batch's shared encoding, so N subscribers cost one encoding; contiguous batches queued for
 * a subscriber that fell behind go as one larger frame of its own. A durable subscription whose
 * queue overflowed ends with `subscription_lagged` naming the first dropped offset; any other
 * learns of records dropped for it from a loss notice (an empty event batch at the offset after
 * them) sent once its queue drains.
 */
import type { Connection, TransportStream } from '@felix/transport';
import {
  FLAG_BINARY_EVENT_BATCH_SHARED,
  FLAG_EVENT_BATCH_OFFSETS,
  FLAG_EVENT_BATCH_SKIPPED,
  FLAG_EVENT_BATCH_TIMESTAMPS,
  encodeMessage as jsonFrame,
} from '@felix/wire';
import type { StreamConfig } from '../config/types.js';
import { EVENT_WRITE_BYTES_MAX } from '../limits.js';
import { JSON_VARIANT, eventsFrame, lossFrame, runFrame } from './event-frame.js';
import { type Negotiated, has } from '../session/negotiation.js';
import type { EncodedFrame, EventBatch, EventVariant } from './event-batch.js';
import type { StreamDeps } from './deps.js';
import type { ShardSubscription } from './shard.js';

export class SubscriptionWriter {
  private stopped = false;
  private uni: TransportStream | null = null;
  private readonly variant: EventVariant;
  private readonly encode: (batch: EventBatch, variant: EventVariant) => EncodedFrame;
  private readonly scope: { tenant_id: string; namespace: string; stream: string };

  constructor(
    private readonly conn: Connection,
    private readonly ctx: Pick<StreamDeps, 'metrics' | 'log'>,
    private readonly auth: Negotiated,
    readonly id: number,
    stream: StreamConfig,
    readonly shard: number,
    private readonly sub: ShardSubscription,
  ) {
    this.variant = has(auth.flags, FLAG_BINARY_EVENT_BATCH_SHARED)
      ? FLAG_BINARY_EVENT_BATCH_SHARED |
        (auth.flags & (FLAG_EVENT_BATCH_OFFSETS | FLAG_EVENT_BATCH_TIMESTAMPS))
      : JSON_VARIANT;
    const scope = { tenant_id: stream.tenant, namespace: stream.namespace, stream: stream.name };
    this.scope = scope;
    this.encode = (batch, variant) => eventsFrame(batch, variant, scope);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.sub.unsubscribe();
    this.uni?.reset(0);
  }

  async run(): Promise<void> {
    const m = this.ctx.metrics;
    m.subscriptions.inc();
    try {
      const uni = await this.conn.openUni();
      this.uni = uni;
      if (this.stopped) {
        uni.reset(0);
        return;
      }
      void uni.closed.then(() => this.stop());
      await uni.write(jsonFrame({ type: 'event_stream_hello', subscription_id: this.id }));
      for await (const batch of this.sub.history()) {
        if (this.stopped) return;
        const parts = this.historyBytes(batch);
        await this.write(uni, parts, frameBytes(parts), batch.count);
      }
      while (!this.stopped) {
        const item = await this.sub.queue.take();
        if (item.kind === 'end') break;
        if (item.kind === 'lagged') {
          m.subscriptionsLagged.inc();
          await uni.write(
            jsonFrame({
              type: 'subscription_lagged',
              subscription_id: this.id,
              resume_from: item.resumeFrom,
            }),
          );
          break;
        }
        if (item.kind === 'loss') await this.reportLoss(uni, item.next);
        else await this.writeQueued(uni, item.batches);
      }
      if (!this.stopped) await uni.end();
    } catch (err) {
      this.ctx.log.debug({ err, subscription: this.id }, 'subscription writer ended');
      // A failure here (the shard's log closed under a history read, say) must still end the
      // client's stream: left open, its reader would wait for ever instead of resubscribing.
      this.uni?.reset(0);
    } finally {
      this.stopped = true;
      this.sub.unsubscribe();
      m.subscriptions.dec();
    }
  }

  /**
   * Writes an envelope and, in the same turn, the envelopes queued behind it (the transport
   * coalesces the writes of one turn into one socket write; nothing is copied here).
   */
  private async writeQueued(uni: TransportStream, batches: EventBatch[]): Promise<void> {
    const parts = [...this.live(batches)];
    let bytes = frameBytes(parts);
    let records = recordsOf(batches);
    while (bytes < EVENT_WRITE_BYTES_MAX) {
      const more = this.sub.queue.poll();
      if (!more) break;
      const encoded = this.live(more);
      for (const part of encoded) parts.push(part);
      bytes += frameBytes(encoded);
      records += recordsOf(more);
    }
    await this.write(uni, parts, bytes, records);
  }

  /**
   * One envelope's frame: a lone batch's shared encoding (N subscribers that keep up cost one
   * encoding), or, for a subscriber that fell behind, its contiguous batches merged into one
   * larger frame of its own. Taking it hands back this queue's references.
   */
  private live(batches: readonly EventBatch[]): EncodedFrame {
    let bytes: EncodedFrame;
    if (batches.length === 1) {
      bytes = batches[0]!.encoded(this.variant, this.encode, () =>
        this.ctx.metrics.eventBatchesEncoded.inc(),
      );
    } else {
      bytes = runFrame(batches, this.variant, this.scope);
      this.ctx.metrics.eventBatchesMerged.inc(batches.length);
    }
    for (const b of batches) b.release();
    return bytes;
  }

  /** Tells the subscriber records were dropped before `next` (nothing when it has no offsets). */
  private async reportLoss(uni: TransportStream, next: number): Promise<void> {
    const frame = lossFrame(next, this.variant, this.scope);
    if (frame === undefined) return;
    this.ctx.metrics.lossNotices.inc();
    await uni.write(frame);
  }

  private historyBytes(batch: EventBatch): EncodedFrame {
    let variant = this.variant;
    if (
      batch.skippedBefore > 0 &&
      variant !== JSON_VARIANT &&
      has(this.auth.flags, FLAG_EVENT_BATCH_SKIPPED | FLAG_EVENT_BATCH_OFFSETS)
    ) {
      variant |= FLAG_EVENT_BATCH_SKIPPED;
    }
    return this.encode(batch, variant);
  }

  /** Writes the parts back to back; the stream keeps write order, so waiting for the last one
   *  waits for all (and a failed write fails the last one too). */
  private async write(
    uni: TransportStream,
    parts: readonly Uint8Array[],
    bytes: number,
    records: number,
  ): Promise<void> {
    const last = parts.length - 1;
    // A failed part write fails the last one too, which is awaited and reported.
    for (let i = 0; i < last; i++) uni.write(parts[i]!).catch(() => undefined);
    await uni.write(parts[last]!);
    this.ctx.metrics.deliveredRecords.inc(records);
    this.ctx.metrics.deliveredBytes.inc(bytes);
  }

  get queueDepth(): number {
    return this.sub.queue.depth;
  }

  /** Bytes queued for this subscriber (see `queuedBytesOf`). */
  get queuedBytes(): number {
    return this.sub.queue.bytes;
  }
}

function recordsOf(batches: readonly EventBatch[]): number {
  let n = 0;
  for (const b of batches) n += b.count;
  return n;
}

function frameBytes(parts: readonly Uint8Array[]): number {
  let n = 0;
  for (const p of parts) n += p.byteLength;
  return n;
}
