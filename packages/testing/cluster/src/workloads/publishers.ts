/**
 * Publishers: each process publishes unique values `<process>-<n>` with acknowledgement, under a
 * seeded key, to a seeded stream. The at-least-once variant sends a value again (attempt + 1)
 * while its outcome is unknown, up to PUBLISH_ATTEMPTS_MAX sends.
 */
import type { FelixClient } from '@felix/client';
import { PUBLISH_ATTEMPTS_MAX, PUBLISH_KEYS, WORKLOAD_ERROR_BACKOFF_MS } from '../limits.js';
import type { Rng } from '../rng.js';
import {
  type WorkloadContext,
  closeClient,
  pace,
  pause,
  recorded,
  workloadClient,
} from './common.js';

export interface PublisherOptions {
  process: string;
  rng: Rng;
  /** Send a value again while its outcome is unknown. */
  resend: boolean;
}

/** One acked publish, recorded; answers the outcome's phase. */
export async function recordedPublish(
  ctx: WorkloadContext,
  client: FelixClient,
  process: string,
  send: { stream: string; key: string; value: string; attempt: number },
): Promise<{ phase: 'ok'; shard: number; offset: number } | { phase: 'fail' | 'info' }> {
  const id = ctx.recorder.invoke(process, { f: 'publish', ...send });
  const out = await recorded(
    ctx.recorder,
    id,
    async (signal) => {
      // The ack names the offset only; the client names the shard from the stream's routing,
      // which it knows once it has asked for it (cached after the first time).
      await client.shards(send.stream, signal);
      return client.publish(send.stream, send.value, { key: send.key, signal });
    },
    (r) => ({ shard: r.shard, offset: r.offset }),
  );
  if (!out.ok) return { phase: out.phase };
  return { phase: 'ok', shard: out.value.shard ?? 0, offset: out.value.offset ?? 0 };
}

export async function runPublisher(ctx: WorkloadContext, opts: PublisherOptions): Promise<void> {
  const client = await workloadClient(ctx.target);
  try {
    for (let n = 0; !ctx.signal.aborted; n++) {
      const stream = opts.rng.pick(ctx.names.streams).name;
      const key = `key-${opts.rng.int(0, PUBLISH_KEYS - 1)}`;
      const value = `${opts.process}-${n}`;
      const sends = opts.resend ? PUBLISH_ATTEMPTS_MAX : 1;
      for (let attempt = 1; attempt <= sends; attempt++) {
        const { phase } = await recordedPublish(ctx, client, opts.process, {
          stream,
          key,
          value,
          attempt,
        });
        if (phase !== 'ok') await pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal);
        // A refusal says nothing was written: a new value is as good; resend only the unknown.
        if (phase !== 'info' || ctx.signal.aborted) break;
      }
      await pace(opts.rng, ctx.signal);
    }
  } finally {
    await closeClient(client);
  }
}
