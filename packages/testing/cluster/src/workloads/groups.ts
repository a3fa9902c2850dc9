/**
 * Group consumers: each process polls one shard of the campaign's group one record at a time
 * with a short visibility timeout, as a named consumer, and settles what it got: mostly ack,
 * sometimes nack, now and then nothing (the claim lapses and the record is handed out again).
 */
import type { FelixClient } from '@felix/client';
import { GROUP_POLL_WAIT_MS, GROUP_VISIBILITY_MS, WORKLOAD_ERROR_BACKOFF_MS } from '../limits.js';
import type { Rng } from '../rng.js';
import {
  type WorkloadContext,
  closeClient,
  pace,
  pause,
  recorded,
  text,
  workloadClient,
} from './common.js';

export interface GroupConsumerOptions {
  process: string;
  rng: Rng;
  shard: number;
}

type Group = ReturnType<FelixClient['group']>;
type Message = Awaited<ReturnType<Group['poll']>>[number];

export interface PollSpec {
  process: string;
  shard: number;
  max: number;
  visibilityMs: number;
}

/** One recorded poll; answers the messages handed out (undefined when it failed). */
export async function recordedPoll(
  ctx: WorkloadContext,
  group: Group,
  spec: PollSpec,
): Promise<Message[] | undefined> {
  const { stream, name } = ctx.names.group;
  const id = ctx.recorder.invoke(spec.process, {
    f: 'group_poll',
    stream,
    group: name,
    shard: spec.shard,
    consumer: spec.process,
  });
  const out = await recorded(
    ctx.recorder,
    id,
    (signal) =>
      group.poll({
        max: spec.max,
        waitMs: GROUP_POLL_WAIT_MS,
        visibilityMs: spec.visibilityMs,
        signal,
      }),
    (msgs) => ({
      records: msgs.map((m) => ({ offset: m.offset, value: text(m.payload), attempt: m.attempts })),
    }),
  );
  return out.ok ? out.value : undefined;
}

/** One recorded ack or nack of `msg`; answers whether it was ok. */
export async function recordedSettle(
  ctx: WorkloadContext,
  process: string,
  msg: Message,
  how: 'ack' | 'nack',
  shard: number,
): Promise<boolean> {
  const { stream, name } = ctx.names.group;
  const id = ctx.recorder.invoke(process, {
    f: how === 'ack' ? 'group_ack' : 'group_nack',
    stream,
    group: name,
    shard,
    offset: msg.offset,
    consumer: process,
  });
  const out = await recorded(ctx.recorder, id, () => (how === 'ack' ? msg.ack() : msg.nack()));
  return out.ok;
}

export async function runGroupConsumer(
  ctx: WorkloadContext,
  opts: GroupConsumerOptions,
): Promise<void> {
  const client = await workloadClient(ctx.target);
  const { stream, name } = ctx.names.group;
  const group = client.group(stream, name, { shard: opts.shard, consumer: opts.process });
  const spec = {
    process: opts.process,
    shard: opts.shard,
    max: 1,
    visibilityMs: GROUP_VISIBILITY_MS,
  };
  try {
    while (!ctx.signal.aborted) {
      const msgs = await recordedPoll(ctx, group, spec);
      let ok = msgs !== undefined;
      for (const msg of msgs ?? []) {
        const roll = opts.rng.float();
        // About one in ten left alone: its claim lapses and the group hands it out again.
        if (roll < 0.1) continue;
        const how = roll < 0.2 ? 'nack' : 'ack';
        ok = (await recordedSettle(ctx, opts.process, msg, how, opts.shard)) && ok;
      }
      await (ok ? pace(opts.rng, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await closeClient(client);
  }
}
