/**
 * Where each shard of a new subscription starts, and its shard readers: one for a `shard` named,
 * else one per shard of the stream (looked up). Kept apart from the client (client.ts) and the
 * readers themselves (subscription.ts).
 */
import { InvalidArgumentError } from './errors.js';
import { microsOf } from './offset-for-time.js';
import { type ReaderHost, type ReaderStart, ShardReader } from './subscription.js';
import type { ShardOffsets, SubscribeOptions } from './types.js';

/** The one start every shard takes, for a `from` that is not `{ offsets }`. */
function commonStart(from: NonNullable<SubscribeOptions['from']>): ReaderStart {
  if (typeof from === 'number') return { offset: from };
  if (typeof from === 'string') return from;
  return 'time' in from ? { time: microsOf(from.time) } : 'latest';
}

/**
 * The readers of a subscription to `stream` under `opts` (checked already): `shards` looks the
 * stream's shard count up when no `shard` is named.
 */
export async function subscriptionReaders(
  host: ReaderHost,
  stream: string,
  opts: SubscribeOptions,
  shards: (signal: AbortSignal) => Promise<number>,
  signal: AbortSignal,
  capacity: number,
): Promise<ShardReader[]> {
  const from = opts.from ?? 'latest';
  const perShard = typeof from === 'object' && 'offsets' in from ? from : undefined;
  const start = commonStart(from);
  const startOf = (shard: number): ReaderStart =>
    perShard === undefined ? start : shardStart(stream, perShard, shard);
  const timestamps = opts.timestamps === true;
  const reader = (shard: number, at: ReaderStart) =>
    new ShardReader(host, stream, shard, at, capacity, signal, {}, timestamps);
  if (opts.shard !== undefined) return [reader(opts.shard, startOf(opts.shard))];
  const n = await shards(signal);
  if (n > 1 && typeof from === 'number') {
    throw new InvalidArgumentError('an exact offset needs `shard` on a multi-shard stream');
  }
  if (perShard !== undefined) checkShardsNamed(stream, perShard, n);
  const starts = Array.from({ length: n }, (_, i) => startOf(i));
  return starts.map((at, i) => reader(i, at));
}

/** A merged subscription's `{ offsets }` names no shard `stream` lacks (it has `shards`): a
 *  resume against a stream made again with fewer shards must not quietly drop some. */
function checkShardsNamed(stream: string, from: ShardOffsets, shards: number): void {
  const beyond = Object.keys(from.offsets)
    .map(Number)
    .filter((s) => s >= shards);
  if (beyond.length > 0)
    throw new InvalidArgumentError(
      `from.offsets names shard ${beyond.join(', ')} of ${stream}, which has ${shards}`,
    );
}

/**
 * Where `shard` of `stream` starts under `{ offsets, otherwise }`: its own offset, else the
 * fallback; InvalidArgumentError when neither is given (a resume must not quietly start a
 * shard it does not name at its tail, skipping what came meanwhile).
 */
function shardStart(stream: string, from: ShardOffsets, shard: number): ReaderStart {
  const offset = from.offsets[shard];
  if (offset !== undefined) return { offset };
  if (from.otherwise !== undefined) return from.otherwise;
  throw new InvalidArgumentError(
    `from.offsets names no offset for shard ${shard} of ${stream}: name every shard or give \`otherwise\``,
  );
}
