/**
 * Checks of a call's arguments that FelixClient makes before anything is sent: each refusal is
 * an InvalidArgumentError naming what is wrong.
 */
import {
  BadAddressError,
  BadTlsMaterialError,
  normalizeFingerprint,
  parseAddress,
} from '@felix/transport';
import { BINARY_STRING_BYTES_MAX } from '@felix/wire';
import { InvalidArgumentError } from './errors.js';
import type { ConnectOptions, ShardOffsets, SubscribeOptions } from './types.js';
import { checkWellFormed, shown } from './util/well-formed.js';

const TEXT = new TextEncoder();

/** A stream name the wire can carry: not empty, well-formed, at most BINARY_STRING_BYTES_MAX
 *  UTF-8 bytes. */
export function checkStreamName(stream: string): void {
  if (stream === '') throw new InvalidArgumentError('stream must not be empty');
  checkWellFormed(stream, 'the stream name');
  if (
    stream.length * 3 > BINARY_STRING_BYTES_MAX &&
    TEXT.encode(stream).length > BINARY_STRING_BYTES_MAX
  )
    throw new InvalidArgumentError(`a stream name exceeds ${BINARY_STRING_BYTES_MAX} bytes`);
}

/** Refuses, before any dial, connect options no broker could serve: a server address the
 *  transport cannot parse (no retry or reconnect would ever reach it), an empty tenant, a name
 *  or a token of the wrong kind. */
export function checkConnectOptions(opts: ConnectOptions): void {
  if (opts.servers.length === 0)
    throw new InvalidArgumentError('servers must name at least one broker');
  for (const server of opts.servers) {
    try {
      parseAddress(server);
    } catch (err) {
      if (!(err instanceof BadAddressError)) throw err;
      throw new InvalidArgumentError(`servers: ${err.message}`, { cause: err });
    }
  }
  // A pin that is no SHA-256 digest fails every dial alike: refused here, never retried.
  const fingerprint = opts.tls?.fingerprint;
  if (fingerprint !== undefined) {
    try {
      normalizeFingerprint(fingerprint);
    } catch (err) {
      if (!(err instanceof BadTlsMaterialError)) throw err;
      throw new InvalidArgumentError(`tls.fingerprint: ${err.message}`, { cause: err });
    }
  }
  if (opts.tenant === '') throw new InvalidArgumentError('tenant must not be empty');
  checkWellFormed(opts.tenant, 'the tenant');
  if (opts.namespace !== undefined) checkWellFormed(opts.namespace, 'the namespace');
  const token: unknown = opts.token;
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'function')
    throw new InvalidArgumentError('token must be a string or a function answering one');
}

/** Refuses, at the call, subscribe options no broker could serve (they hung or threw wire
 *  errors before: a buffer of 0 batches never took one). */

/** A `{ offsets }` start: whole shard numbers to whole offsets, and a known fallback. */
function checkShardOffsets(from: ShardOffsets): void {
  const whole = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  const { offsets, otherwise } = from;
  // A plain object (as positions() answers and JSON gives back) or an array by shard; a Map or
  // another class would be read as naming no shard.
  const proto = typeof offsets === 'object' && offsets !== null && Object.getPrototypeOf(offsets);
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null)
    throw new InvalidArgumentError(
      'from.offsets must be a plain object (or an array) mapping shard numbers to offsets',
    );
  for (const [shard, offset] of Object.entries(offsets)) {
    if (!/^(0|[1-9][0-9]*)$/.test(shard) || !whole(Number(shard)))
      throw new InvalidArgumentError(`from.offsets: ${shard} is no shard number`);
    if (!whole(offset))
      throw new InvalidArgumentError(
        `from.offsets: shard ${shard}'s offset must be a whole number >= 0, got ${shown(offset)}`,
      );
  }
  if (otherwise !== undefined && otherwise !== 'earliest' && otherwise !== 'latest')
    throw new InvalidArgumentError(`from.otherwise must be 'earliest' or 'latest'`);
}

export function checkSubscribeOptions(opts: SubscribeOptions): void {
  const whole = (v: unknown, min: number) => Number.isSafeInteger(v) && (v as number) >= min;
  const { from, shard, bufferBatches, queueCapacity } = opts;
  if (typeof from === 'number' && !whole(from, 0))
    throw new InvalidArgumentError(`from must be an offset (a whole number >= 0), got ${from}`);
  if (typeof from === 'string' && from !== 'earliest' && from !== 'latest')
    throw new InvalidArgumentError(
      `from must be 'earliest', 'latest', an offset, { time } or { offsets }`,
    );
  if (typeof from === 'object' && from !== null && 'offsets' in from) checkShardOffsets(from);
  if (shard !== undefined && !whole(shard, 0))
    throw new InvalidArgumentError(`shard must be a whole number >= 0, got ${shard}`);
  if (bufferBatches !== undefined && !whole(bufferBatches, 1))
    throw new InvalidArgumentError(
      `bufferBatches must be a whole number >= 1, got ${bufferBatches}`,
    );
  if (queueCapacity !== undefined && !whole(queueCapacity, 1))
    throw new InvalidArgumentError(
      `queueCapacity must be a whole number >= 1, got ${queueCapacity}`,
    );
}
