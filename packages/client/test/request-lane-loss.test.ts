// Goal: a request stream that ends with the transport's own error (a TLS socket closed under it,
// as by a broker SIGKILLed) fails its waiting requests with the client's typed errors, as a loss
// of the connection does: a put's outcome is unknown, a get's connection was lost. Method: a
// Cache over a RequestLane whose fake stream's read rejects with @felix/transport's
// ConnectionClosedError once the requests are written.
import { ConnectionClosedError } from '@felix/transport';
import { waitFor } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { ClientError, ConnectionLostError, OutcomeUnknownError } from '../src/errors.js';
import { REQUEST_TIMEOUT_MS_DEFAULT } from '../src/limits.js';
import { Cache } from '../src/projections/cache.js';
import type { ProjectionHost } from '../src/projections/host.js';
import { FrameStream } from '../src/protocol/frame-stream.js';
import { RequestLane } from '../src/protocol/request-lane.js';
import { RequestTable } from '../src/protocol/request-table.js';
import { TurnBatcher } from '../src/protocol/turn-batcher.js';
import { CheckTicks } from '../src/util/check-ticks.js';

/** A request stream whose read fails with `err` when the test calls `cut`. */
class CutStream {
  readonly writes: Uint8Array[] = [];
  private failWith: ((err: unknown) => void) | undefined;
  async write(b: Uint8Array): Promise<void> {
    this.writes.push(b);
  }
  reset(): void {}
  cut(err: unknown): void {
    this.failWith?.(err);
  }
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () =>
        new Promise<IteratorResult<Uint8Array>>((_resolve, reject) => {
          this.failWith = reject;
        }),
      return: async () => ({ done: true, value: undefined }),
    };
  }
}

function cacheOverLane() {
  const stream = new CutStream();
  const lane = new RequestLane({
    server: 'tls://127.0.0.1:1',
    table: new RequestTable(),
    turn: new TurnBatcher(),
    ticks: new CheckTicks(),
    timeoutMs: REQUEST_TIMEOUT_MS_DEFAULT,
    open: async () => ({ stream: stream as never, frames: new FrameStream(stream as never) }),
  });
  const bc = {
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: 0, featuresHi: 0, window: 1 },
    requests: lane,
  };
  const host = {
    closed: false,
    connection: async () => bc as never,
    live: () => bc as never,
  } as unknown as ProjectionHost;
  return { cache: new Cache(host, 'users'), stream };
}

describe('a request stream ended by the transport', () => {
  it('requests_waiting_on_a_request_stream_the_transport_closed_fail_with_the_clients_typed_errors', async () => {
    const { cache, stream } = cacheOverLane();
    const put = cache.put('u1', 'v').catch((e: unknown) => e);
    const get = cache.get('u1').catch((e: unknown) => e);
    await waitFor(() => stream.writes.length > 0, 'the requests are written', 5_000);
    stream.cut(new ConnectionClosedError(0, 'the socket closed'));
    const putErr = await put;
    const getErr = await get;
    // The put may have been applied: the documented unknown outcome, not the transport's error.
    expect(putErr).toBeInstanceOf(OutcomeUnknownError);
    expect(getErr).toBeInstanceOf(ConnectionLostError);
    expect(getErr).toBeInstanceOf(ClientError);
    // A request made after it is refused the same way.
    await expect(cache.get('u2')).rejects.toBeInstanceOf(ConnectionLostError);
  });
});
