// The shard lineage files and their bookkeeping (cluster/lineage-markers.ts,
// cluster/shard-lineages.ts): an assignment carrying a floor generation (an accepted loss
// restarted the shard empty) gates a broker it names whose copy was kept under an older floor,
// until that copy is discarded and the floor recorded. Real files in a temp directory; the
// discard is recorded.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeIo } from '@felix/storage';
import fc from 'fast-check';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeletedNames } from '../src/cluster/deleted-names.js';
import { type AssignmentRecord, assignmentFrom } from '../src/cluster/feed-items.js';
import {
  LineageMarkerStore,
  decodeLineageMarker,
  encodeLineageMarker,
} from '../src/cluster/lineage-markers.js';
import { ShardLineages } from '../src/cluster/shard-lineages.js';
import { LineageMarkerError } from '../src/errors.js';
import { LINEAGE_MARKER_BYTES_MAX } from '../src/limits.js';

const log = pino({ level: 'silent' });
const SHARD_1 = { tenant: 't', namespace: 'ns', stream: 'orders', shard: 1 };

function assigned(extra: Partial<AssignmentRecord>): AssignmentRecord {
  return {
    tenant_id: 't',
    namespace: 'ns',
    kind: 'stream',
    stream: 'orders',
    shard: 1,
    leader: 'b1',
    replicas: ['b1', 'b2'],
    generation: 4,
    ...extra,
  };
}

describe('shard lineage files', () => {
  let dir: string;
  let store: LineageMarkerStore;
  const warnings: string[] = [];
  const discarded: string[] = [];
  const hooks = {
    discardCopy: async (owner: string, id: typeof SHARD_1) => {
      discarded.push(`${owner} ${id.stream}/${id.shard}`);
    },
    closed: () => false,
    retryLater: () => {
      throw new Error('no settle should fail here');
    },
  };
  const reopened = () =>
    new LineageMarkerStore(dir, nodeIo, (_fields, message) => warnings.push(message));
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-lineages-'));
    warnings.length = 0;
    discarded.length = 0;
    store = reopened();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a_copy_older_than_its_shards_floor_is_discarded_before_the_shard_is_served', async () => {
    const lineages = new ShardLineages(log);
    // No floor, another node's shard, or no data directory: nothing to hold back.
    lineages.observe(assigned({}), 'b2', store);
    lineages.observe(assigned({ floor_generation: 4 }), 'b9', store);
    lineages.observe(assigned({ floor_generation: 4 }), 'b2', undefined);
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(false);
    // A follower the restart names, with no lineage file: its copy (if any) is of the old data.
    lineages.observe(assigned({ floor_generation: 4 }), 'b2', store);
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(true);
    expect(lineages.pending('stream', 't', 'ns', 'orders', 0)).toBe(false);
    expect(lineages.pending('cache', 't', 'ns', 'orders', 1)).toBe(false);
    await lineages.settle(store, hooks);
    expect(discarded).toEqual(['stream orders/1']);
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(false);
    expect(reopened().floorOf('stream', SHARD_1)).toBe(4);
    // Later generations keep the floor: the copy recorded under it is kept.
    lineages.observe(assigned({ floor_generation: 4, generation: 9 }), 'b2', reopened());
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(false);
    // A later restart (a second accepted loss) discards it in turn.
    lineages.observe(assigned({ floor_generation: 10, generation: 10 }), 'b2', store);
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(true);
    await lineages.settle(store, hooks);
    expect(discarded).toEqual(['stream orders/1', 'stream orders/1']);
    expect(store.floorOf('stream', SHARD_1)).toBe(10);
    // The replica whose copy a restart continues keeps it, and records the floor.
    lineages.observe(
      assigned({ floor_generation: 12, generation: 12, floor_base: 'b2' }),
      'b2',
      store,
    );
    expect(lineages.pending('stream', 't', 'ns', 'orders', 1)).toBe(true);
    await lineages.settle(store, hooks);
    expect(discarded).toHaveLength(2);
    expect(store.floorOf('stream', SHARD_1)).toBe(12);
    await store.remove('stream', SHARD_1);
    expect(reopened().floorOf('stream', SHARD_1)).toBe(0);
  });

  it('an_unreadable_lineage_file_keeps_the_copy_rather_than_discarding_it', async () => {
    await store.write('cache', SHARD_1, 3);
    const [file] = await nodeIo.readdir(join(dir, 'lineages', 'cache'));
    await writeFile(join(dir, 'lineages', 'cache', file!), '{"floor": "3"}');
    const again = reopened();
    expect(warnings).toEqual([
      'an unreadable shard lineage file: the copy is kept and the file rewritten',
    ]);
    const lineages = new ShardLineages(log);
    lineages.observe(assigned({ kind: 'cache', floor_generation: 8 }), 'b1', again);
    await lineages.settle(again, hooks);
    // Kept, and the file rewritten: the next floor gates the copy again.
    expect(discarded).toEqual([]);
    expect(decodeLineageMarker(await readFile(join(dir, 'lineages', 'cache', file!)))).toBe(8);
    lineages.observe(assigned({ kind: 'cache', floor_generation: 9 }), 'b1', again);
    await lineages.settle(again, hooks);
    expect(discarded).toEqual(['cache orders/1']);
  });

  it('a_deleted_names_shards_wait_for_no_floor_and_get_no_lineage_file_back', async () => {
    const names = new DeletedNames(log);
    const files = {
      lineages: store,
      discard: async (owner: string, id: typeof SHARD_1) => {
        discarded.push(`${owner} ${id.stream}/${id.shard}`);
        await store.remove('stream', id);
      },
    };
    names.observeAssignment(assigned({ floor_generation: 7 }), 'b2', files);
    expect(names.has('stream', 't', 'ns', 'orders', 1)).toBe(true);
    // Deleted before the pass: its files go with the name, and no floor is written back.
    names.note('stream', { tenant: 't', namespace: 'ns', name: 'orders', shards: 2 });
    await names.discard(files, {
      close: async () => undefined,
      closeShard: async () => undefined,
      closed: () => false,
      retryLater: hooks.retryLater,
    });
    expect(discarded).toEqual(['stream orders/0', 'stream orders/1']);
    expect(names.has('stream', 't', 'ns', 'orders', 1)).toBe(false);
    expect(reopened().floorOf('stream', SHARD_1)).toBe(0);
  });

  it('an_assignment_with_a_malformed_floor_is_not_taken', () => {
    const base = assigned({});
    expect(assignmentFrom({ ...base, floor_generation: 6 })?.floor_generation).toBe(6);
    expect(assignmentFrom({ ...base, floor_generation: 0 })).not.toHaveProperty('floor_generation');
    expect(assignmentFrom(base)).not.toHaveProperty('floor_generation');
    const kept = assignmentFrom({ ...base, floor_generation: 6, floor_base: 'b2' });
    expect(kept).toMatchObject({ floor_generation: 6, floor_base: 'b2' });
    expect(assignmentFrom({ ...base, floor_generation: 6, floor_base: 7 })).toBeNull();
    // Taken without its floor, a stale copy could be served: the whole assignment is refused.
    for (const floor of ['6', -1, 2.5, null, {}]) {
      expect(assignmentFrom({ ...base, floor_generation: floor })).toBeNull();
    }
  });

  it('the_lineage_decoder_refuses_any_other_bytes_with_its_typed_error', () => {
    expect(decodeLineageMarker(encodeLineageMarker(12))).toBe(12);
    expect(() => decodeLineageMarker(new Uint8Array(LINEAGE_MARKER_BYTES_MAX + 1))).toThrow(
      LineageMarkerError,
    );
    const decodesOrRefuses = (bytes: Uint8Array) => {
      try {
        const floor = decodeLineageMarker(bytes);
        // Whatever decodes is what the encoder would write for it.
        expect(decodeLineageMarker(encodeLineageMarker(floor))).toBe(floor);
      } catch (err) {
        expect(err).toBeInstanceOf(LineageMarkerError);
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: LINEAGE_MARKER_BYTES_MAX + 8 }), decodesOrRefuses),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) =>
        decodesOrRefuses(new TextEncoder().encode(JSON.stringify(value))),
      ),
      { numRuns: 2000 },
    );
  });
});
