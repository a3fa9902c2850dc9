/**
 * Checks of a call's arguments that FelixClient makes before anything is sent: each refusal is
 * an InvalidArgumentError naming what is wrong.
 */
import { BINARY_STRING_BYTES_MAX } from '@felix/wire';
import { InvalidArgumentError } from './errors.js';
import type { SubscribeOptions } from './types.js';
import { checkWellFormed } from './util/well-formed.js';

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

/** Refuses, at the call, subscribe options no broker could serve (they hung or threw wire
 *  errors before: a buffer of 0 batches never took one). */
export function checkSubscribeOptions(opts: SubscribeOptions): void {
  const whole = (v: unknown, min: number) => Number.isSafeInteger(v) && (v as number) >= min;
  const { from, shard, bufferBatches, queueCapacity } = opts;
  if (typeof from === 'number' && !whole(from, 0))
    throw new InvalidArgumentError(`from must be an offset (a whole number >= 0), got ${from}`);
  if (typeof from === 'string' && from !== 'earliest' && from !== 'latest')
    throw new InvalidArgumentError(`from must be 'earliest', 'latest', an offset or { time }`);
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
