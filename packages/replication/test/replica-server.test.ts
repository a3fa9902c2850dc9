/**
 * Goal: a follower's replica server, fed untrusted bytes by a peer, answers or throws its one
 * typed error (MalformedPeerFrameError), never anything else, and a request for a shard it
 * does not replicate is refused without opening any log.
 * Method: fast-check over random bytes and over valid request frames with bytes flipped.
 */
import { tempDir } from '@felix/testing-harness';
import { INTERNAL_ERROR, batchChecksum, encodeInternalMessage } from '@felix/wire';
import { SegmentLog } from '@felix/storage';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MalformedPeerFrameError } from '../src/errors.js';
import { ReplicaServer } from '../src/follower/replica-server.js';
import { SHARD, decodeFrame, shardRef } from './support/sim.js';

let dir: { path: string; cleanup: () => Promise<void> };
let server: ReplicaServer;
beforeAll(async () => {
  dir = await tempDir('felix-replica-server-');
  server = new ReplicaServer({
    logOptions: (s) => ({
      root: dir.path,
      shard: { tenant: s.tenantId, namespace: s.namespace, stream: s.stream, shard: s.shard },
      fsync: 'none',
      preallocateBytes: 0,
    }),
    // `not-mine`: placed, and this broker is not in its replica set; `unheard`: no assignment
    // known here yet.
    assignment: (s) =>
      s.stream === 'not-mine'
        ? { generation: 1, follower: false }
        : s.stream === 'unheard'
          ? undefined
          : { generation: 1 },
  });
});
afterAll(async () => {
  await server.close();
  await dir.cleanup();
});

const valid = encodeInternalMessage({
  kind: 'ReplicateRecords',
  correlationId: 9,
  shard: shardRef(1),
  firstOffset: 0,
  checksum: batchChecksum([new Uint8Array([1, 2, 3])]),
  payloads: [new Uint8Array([1, 2, 3])],
});

async function answersOrRefuses(bytes: Uint8Array): Promise<void> {
  try {
    const answer = decodeFrame(await server.handle(bytes));
    expect(['ReplicateOk', 'ReplicateError', 'FenceOk']).toContain(answer.kind);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedPeerFrameError);
  }
}

/** An empty records batch for `stream` (shard 0, generation 1). */
const emptyBatch = (correlationId: number, stream: string) =>
  encodeInternalMessage({
    kind: 'ReplicateRecords',
    correlationId,
    shard: { ...shardRef(1), stream },
    firstOffset: 0,
    checksum: batchChecksum([]),
    payloads: [],
  });

describe('replica server', () => {
  it('a_replica_server_answers_or_refuses_any_bytes_with_its_typed_error', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), answersOrRefuses), {
      numRuns: 300,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }), {
          minLength: 1,
          maxLength: 4,
        }),
        async (flips) => {
          const bytes = valid.slice();
          for (const f of flips) bytes[f.at % bytes.length]! ^= f.bits;
          await answersOrRefuses(bytes);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a_replica_server_answers_storage_failed_when_a_shard_log_cannot_open', async () => {
    // Another writer holds the shard's directory, so the server's open fails.
    const holder = await SegmentLog.open({
      root: dir.path,
      shard: { ...SHARD, stream: 'held' },
      fsync: 'none',
      preallocateBytes: 0,
    });
    try {
      const request = encodeInternalMessage({
        kind: 'ReplicateRecords',
        correlationId: 5,
        shard: { ...shardRef(1), stream: 'held' },
        firstOffset: 0,
        checksum: batchChecksum([]),
        payloads: [],
      });
      expect(decodeFrame(await server.handle(request))).toMatchObject({
        kind: 'ReplicateError',
        correlationId: 5,
        code: INTERNAL_ERROR.StorageFailed,
      });
    } finally {
      await holder.close();
    }
  });

  it('a_replica_server_refuses_a_shard_it_does_not_replicate', async () => {
    const other = emptyBatch(4, 'not-mine');
    expect(decodeFrame(await server.handle(other))).toMatchObject({
      kind: 'ReplicateError',
      correlationId: 4,
      code: INTERNAL_ERROR.Unauthorized,
    });
    expect(server.status({ ...shardRef(1), stream: 'not-mine' })).toBeUndefined();
  });

  it('a_replica_server_asks_for_a_resend_of_a_shard_it_has_no_assignment_of_yet', async () => {
    const early = emptyBatch(6, 'unheard');
    expect(decodeFrame(await server.handle(early))).toMatchObject({
      kind: 'ReplicateError',
      correlationId: 6,
      code: INTERNAL_ERROR.StaleRoute,
    });
    expect(server.status({ ...shardRef(1), stream: 'unheard' })).toBeUndefined();
  });
});
