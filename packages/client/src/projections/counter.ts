/**
 * `felix.counter(name)`: signed 64-bit counters beside the cache `name` (durable brokers only).
 * `add` answers the sum including the delta; `get` answers the sum or undefined when the key was
 * never written. Delivery is at least once: an add retried after a lost answer counts twice.
 */
import { FEATURE_COUNTERS, type Message } from '@felix/wire';
import { InvalidArgumentError, ProtocolError } from '../errors.js';
import { type ProjectionHost, requireFeature } from './host.js';
import { abortable } from '../util/abortable.js';
import type { BrokerConnection } from '../protocol/broker-connection.js';
import { KeyRoutes } from './key-routes.js';
import { checkWellFormed } from '../util/well-formed.js';
import { utf8Over } from '../util/bytes.js';
import { CACHE_KEY_BYTES_MAX } from '../limits.js';

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

export class Counter {
  /** Routing by key in a cluster (null: the client has no router). */
  private readonly keys: KeyRoutes | null;

  constructor(
    private readonly host: ProjectionHost,
    readonly name: string,
  ) {
    if (name === '') throw new InvalidArgumentError('counter name must not be empty');
    checkWellFormed(name, 'the counter name');
    this.keys = host.keys === undefined ? null : new KeyRoutes(host.keys, name, () => host.closed);
  }

  /** Adds `delta` and resolves with the sum including it. */
  async add(key: string, delta: bigint, opts: { signal?: AbortSignal } = {}): Promise<bigint> {
    if (typeof delta === 'number' && Number.isSafeInteger(delta))
      throw new InvalidArgumentError(
        `delta must be a bigint, not a number: write ${delta}n or BigInt(${delta})`,
      );
    if (typeof delta !== 'bigint' || delta < I64_MIN || delta > I64_MAX)
      throw new InvalidArgumentError('delta must be a bigint in the signed 64-bit range');
    const msg = await this.send(key, opts.signal, delta);
    if (msg.value === undefined) throw new ProtocolError('counter_add answered without a value');
    return msg.value;
  }

  /** The sum, or undefined for a key never written (which is not 0n). */
  async get(key: string, opts: { signal?: AbortSignal } = {}): Promise<bigint | undefined> {
    return (await this.send(key, opts.signal)).value;
  }

  private async send(
    key: string,
    signal: AbortSignal | undefined,
    delta?: bigint,
  ): Promise<Extract<Message, { type: 'counter_value' }>> {
    if (typeof key !== 'string' || key === '')
      throw new InvalidArgumentError('a counter key is a non-empty string');
    checkWellFormed(key, 'the counter key');
    // The broker bounds counter keys as cache keys (its store is the cache's).
    if (utf8Over(key, CACHE_KEY_BYTES_MAX))
      throw new InvalidArgumentError(`a counter key exceeds ${CACHE_KEY_BYTES_MAX} bytes`);
    const keys = this.keys;
    if (keys?.active) {
      // In a cluster, on the owner of the key's shard (counters are sharded as their cache).
      const on = (bc: BrokerConnection) => this.sendOn(bc, key, signal, delta);
      const bc = signal?.aborted ? undefined : keys.now(key);
      const sent =
        bc === undefined
          ? keys.run(key, on, signal)
          : on(bc).catch((err: unknown) => keys.run(key, on, signal, { err, from: bc.server }));
      // An abort while it waits to be sent again is the call's AbortedError too.
      return signal === undefined
        ? sent
        : abortable(sent, signal, `counter ${this.name}`, delta !== undefined);
    }
    return this.sendOn(await this.host.connection(signal), key, signal, delta);
  }

  private async sendOn(
    bc: BrokerConnection,
    key: string,
    signal: AbortSignal | undefined,
    delta?: bigint,
  ): Promise<Extract<Message, { type: 'counter_value' }>> {
    requireFeature(bc, FEATURE_COUNTERS, 'counters');
    const { tenant, namespace } = bc.scope;
    const scope = { tenant_id: tenant, namespace, cache: this.name, key };
    const asked = bc.requests.request(
      (request_id) =>
        delta === undefined
          ? { type: 'counter_get', ...scope, request_id }
          : { type: 'counter_add', ...scope, delta, request_id },
      delta === undefined ? undefined : `counter ${this.name}`,
    );
    // The signal ends a call the broker has not answered yet too (an add so ended may have been
    // applied: its AbortedError says unknown outcome). An add sent and cut off by a lost
    // connection rejects with OutcomeUnknownError (request-lane.ts): never sent again
    // (key-routes.ts); one never sent, with ConnectionLostError, which may be.
    const msg = await (signal === undefined
      ? asked
      : abortable(asked, signal, `counter ${this.name}`, delta !== undefined));
    if (msg.type !== 'counter_value')
      throw new ProtocolError(`expected counter_value, got ${msg.type}`);
    return msg;
  }
}
