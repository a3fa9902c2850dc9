/**
 * Publishers: each process publishes unique values `<process>-<n>` with acknowledgement, under a
 * seeded key, to a seeded stream. The at-least-once variant sends a value again (attempt + 1)
 * while its outcome is unknown, up to PUBLISH_ATTEMPTS_MAX sends.
 */
import { PUBLISH_ATTEMPTS_MAX, PUBLISH_KEYS, WORKLOAD_ERROR_BACKOFF_MS } from '../limits.js';
import type { Rng } from '../rng.js';
import { type WorkloadContext, pace, pause, recorded } from './common.js';
import { NodeClients, clientFor } from './router.js';

export interface PublisherOptions {
  process: string;
  rng: Rng;
  /** Send a value again while its outcome is unknown. */
  resend: boolean;
}

export type PublishOutcome =
  | { phase: 'ok'; shard: number; offset: number }
  | { phase: 'fail' | 'info' }
  /** No client could be had for its broker: nothing was invoked. */
  | { phase: 'skipped' };

/** One acked publish, recorded; answers its outcome. */
export async function recordedPublish(
  ctx: WorkloadContext,
  nodes: NodeClients,
  process: string,
  send: { stream: string; key: string; value: string; attempt: number },
): Promise<PublishOutcome> {
  const route = `${send.stream}/${send.key}`;
  const client = await clientFor(nodes, route, ctx.signal);
  if (client === undefined) return { phase: 'skipped' };
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
  if (!out.ok) {
    nodes.learn(route, out.error);
    return { phase: out.phase };
  }
  return { phase: 'ok', shard: out.value.shard ?? 0, offset: out.value.offset ?? 0 };
}

export async function runPublisher(ctx: WorkloadContext, opts: PublisherOptions): Promise<void> {
  const nodes = new NodeClients(ctx.target);
  // Pauses draw from a generator of their own, so the choices depend on the seed alone.
  const pacing = opts.rng.fork('pace');
  try {
    for (let n = 0; !ctx.signal.aborted; n++) {
      const stream = opts.rng.pick(ctx.names.streams).name;
      const key = `key-${opts.rng.int(0, PUBLISH_KEYS - 1)}`;
      const value = `${opts.process}-${n}`;
      const sends = opts.resend ? PUBLISH_ATTEMPTS_MAX : 1;
      for (let attempt = 1; attempt <= sends; attempt++) {
        const send = { stream, key, value, attempt };
        const { phase } = await recordedPublish(ctx, nodes, opts.process, send);
        if (phase === 'fail' || phase === 'info')
          await pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal);
        // A refusal says nothing was written: a new value is as good; resend only the unknown.
        if (phase !== 'info' || ctx.signal.aborted) break;
      }
      await pace(pacing, ctx.signal);
    }
  } finally {
    await nodes.close();
  }
}
