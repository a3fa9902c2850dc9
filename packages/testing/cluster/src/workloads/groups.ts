/**
 * Group consumers: each process polls one shard of the campaign's group one record at a time
 * with a short visibility timeout, as a named consumer, and settles what it got: mostly ack,
 * sometimes nack, now and then nothing (the claim lapses and the record is handed out again).
 */
import type { FelixClient } from '@felix/client';
import { GROUP_POLL_WAIT_MS, GROUP_VISIBILITY_MS, WORKLOAD_ERROR_BACKOFF_MS } from '../limits.js';
import type { Rng } from '../rng.js';
import { type Outcome, type WorkloadContext, pace, pause, recorded, text } from './common.js';
import { NodeClients, clientFor } from './router.js';

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

/** One recorded poll of `group` as consumer `spec.process`. */
export function recordedPoll(
  ctx: WorkloadContext,
  group: Group,
  spec: PollSpec,
): Promise<Outcome<Message[]>> {
  const { stream, name } = ctx.names.group;
  const id = ctx.recorder.invoke(spec.process, {
    f: 'group_poll',
    stream,
    group: name,
    shard: spec.shard,
    consumer: spec.process,
  });
  const poll = { max: spec.max, waitMs: GROUP_POLL_WAIT_MS, visibilityMs: spec.visibilityMs };
  return recorded(
    ctx.recorder,
    id,
    (signal) => group.poll({ ...poll, signal }),
    (msgs) => ({
      records: msgs.map((m) => ({ offset: m.offset, value: text(m.payload), attempt: m.attempts })),
    }),
  );
}

/** One recorded ack or nack of `msg`. */
export function recordedSettle(
  ctx: WorkloadContext,
  process: string,
  msg: Message,
  how: 'ack' | 'nack',
  shard: number,
): Promise<Outcome<void>> {
  const { stream, name } = ctx.names.group;
  const id = ctx.recorder.invoke(process, {
    f: how === 'ack' ? 'group_ack' : 'group_nack',
    stream,
    group: name,
    shard,
    offset: msg.offset,
    consumer: process,
  });
  return recorded(ctx.recorder, id, () => (how === 'ack' ? msg.ack() : msg.nack()));
}

/** The group of the campaign on `client`, one per client (a client per broker when routed). */
export function groupOn(
  groups: Map<FelixClient, Group>,
  client: FelixClient,
  ctx: WorkloadContext,
  shard: number,
  consumer: string,
): Group {
  let group = groups.get(client);
  if (group === undefined) {
    group = client.group(ctx.names.group.stream, ctx.names.group.name, { shard, consumer });
    groups.set(client, group);
  }
  return group;
}

/** Polls once and settles what came: answers whether every call was ok. */
async function pollAndSettle(
  ctx: WorkloadContext,
  opts: GroupConsumerOptions,
  nodes: NodeClients,
  group: Group,
): Promise<boolean> {
  const route = `${ctx.names.group.stream}/${opts.shard}`;
  const spec = {
    process: opts.process,
    shard: opts.shard,
    max: 1,
    visibilityMs: GROUP_VISIBILITY_MS,
  };
  const polled = await recordedPoll(ctx, group, spec);
  if (!polled.ok) {
    nodes.learn(route, polled.error);
    return false;
  }
  let ok = true;
  for (const msg of polled.value) {
    const roll = opts.rng.float();
    // About one in ten left alone: its claim lapses and the group hands it out again.
    if (roll < 0.1) continue;
    const settled = await recordedSettle(
      ctx,
      opts.process,
      msg,
      roll < 0.2 ? 'nack' : 'ack',
      opts.shard,
    );
    ok = settled.ok && ok;
  }
  return ok;
}

export async function runGroupConsumer(
  ctx: WorkloadContext,
  opts: GroupConsumerOptions,
): Promise<void> {
  const nodes = new NodeClients(ctx.target);
  // Pauses draw from a generator of their own, so the choices depend on the seed alone.
  const pacing = opts.rng.fork('pace');
  const groups = new Map<FelixClient, Group>();
  const route = `${ctx.names.group.stream}/${opts.shard}`;
  try {
    while (!ctx.signal.aborted) {
      const client = await clientFor(nodes, route, ctx.signal);
      if (client === undefined) continue;
      const group = groupOn(groups, client, ctx, opts.shard, opts.process);
      const ok = await pollAndSettle(ctx, opts, nodes, group);
      await (ok ? pace(pacing, ctx.signal) : pause(WORKLOAD_ERROR_BACKOFF_MS, ctx.signal));
    }
  } finally {
    await nodes.close();
  }
}
