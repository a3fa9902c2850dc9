/**
 * `offset_for_time` (FEATURE_RECORD_TIMESTAMPS): the first offset of one shard whose record was
 * appended at or after a time, asked on the connection's request channel.
 */
import { FEATURE_RECORD_TIMESTAMPS } from '@felix/wire';
import { InvalidArgumentError, ProtocolError } from './errors.js';
import { requireFeature } from './projections/host.js';
import type { BrokerConnection } from './protocol/broker-connection.js';

/** A time as the wire carries it: whole microseconds since the epoch, from a Date or as given. */
export function microsOf(at: Date | number): number {
  const micros = at instanceof Date ? at.getTime() * 1000 : at;
  if (typeof micros !== 'number' || !Number.isSafeInteger(micros) || micros < 0) {
    throw new InvalidArgumentError(
      'a time is a valid Date or whole microseconds since the epoch (not negative)',
    );
  }
  return micros;
}

/** The first offset of `shard` appended at or after `atMicros`; undefined when none is yet. */
export async function offsetForTimeOn(
  bc: BrokerConnection,
  stream: string,
  shard: number,
  atMicros: number,
): Promise<number | undefined> {
  requireFeature(bc, FEATURE_RECORD_TIMESTAMPS, 'offset_for_time');
  const { tenant, namespace } = bc.scope;
  const msg = await bc.requests.request((request_id) => ({
    type: 'offset_for_time',
    tenant_id: tenant,
    namespace,
    stream,
    shard,
    at_micros: atMicros,
    request_id,
  }));
  if (msg.type !== 'offset_value')
    throw new ProtocolError(`expected offset_value, got ${msg.type}`);
  return msg.offset;
}
