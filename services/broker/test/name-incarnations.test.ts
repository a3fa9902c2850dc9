// The name-incarnation files and their bookkeeping (cluster/name-markers.ts,
// cluster/name-incarnations.ts): a name's file says which creation of the name its shard
// directories were written for; a name listed under another creation has its old files
// discarded before it is served. Real files in a temp directory; the discard is recorded.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeIo } from '@felix/storage';
import fc from 'fast-check';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeletedName } from '../src/cluster/deleted-names.js';
import { NameIncarnations } from '../src/cluster/name-incarnations.js';
import {
  type MarkedName,
  NameMarkerStore,
  decodeNameMarker,
  encodeNameMarker,
} from '../src/cluster/name-markers.js';
import { NameMarkerError } from '../src/errors.js';
import { NAME_MARKER_BYTES_MAX } from '../src/limits.js';

const log = pino({ level: 'silent' });
const ORDERS = { tenant: 't', namespace: 'ns', name: 'orders', shards: 2 };
const ORDERS_NAME: MarkedName = { owner: 'stream', tenant: 't', namespace: 'ns', name: 'orders' };

describe('name incarnation files', () => {
  let dir: string;
  let store: NameMarkerStore;
  const warnings: string[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-names-'));
    warnings.length = 0;
    store = new NameMarkerStore(dir, nodeIo, (_fields, message) => warnings.push(message));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function settleHooks(discarded: DeletedName[]) {
    return {
      discardOld: async (d: DeletedName) => {
        discarded.push(d);
      },
      closed: () => false,
      retryLater: () => {
        throw new Error('no settle should fail here');
      },
    };
  }

  /** The store as a broker started again finds it (its files read back). */
  const reopened = () =>
    new NameMarkerStore(dir, nodeIo, (_fields, message) => warnings.push(message));

  it('a_name_listed_under_another_creation_has_its_old_files_discarded_before_it_is_served', async () => {
    const names = new NameIncarnations(log);
    const discarded: DeletedName[] = [];
    names.observe('stream', { ...ORDERS, uid: 'first' }, store);
    // No file yet: nothing of another creation to discard, so it is served at once.
    expect(names.pending('stream', 't', 'ns', 'orders')).toBe(false);
    await names.settle(store, settleHooks(discarded));
    expect(discarded).toEqual([]);
    expect(reopened().known(ORDERS_NAME)).toEqual({ uid: 'first', shards: 2 });

    // A broker started again (new bookkeeping, files read back) that finds the name created
    // again, with one shard: unserved until every shard of the earlier creation (two) is gone.
    const restarted = new NameIncarnations(log);
    const again = reopened();
    restarted.observe('stream', { ...ORDERS, shards: 1, uid: 'second' }, again);
    expect(restarted.pending('stream', 't', 'ns', 'orders')).toBe(true);
    await restarted.settle(again, settleHooks(discarded));
    expect(discarded).toEqual([{ ...ORDERS_NAME, shards: 2 }]);
    expect(reopened().known(ORDERS_NAME)).toEqual({ uid: 'second', shards: 1 });
    expect(restarted.pending('stream', 't', 'ns', 'orders')).toBe(false);

    // The same creation listed again (a restart, a snapshot) discards nothing and waits for
    // nothing.
    const third = new NameIncarnations(log);
    third.observe('stream', { ...ORDERS, shards: 1, uid: 'second' }, reopened());
    expect(third.pending('stream', 't', 'ns', 'orders')).toBe(false);
    await third.settle(reopened(), settleHooks(discarded));
    expect(discarded).toHaveLength(1);
  });

  it('a_deleted_names_incarnation_file_goes_and_a_uid_less_name_is_not_held_back', async () => {
    const names = new NameIncarnations(log);
    names.observe('cache', { ...ORDERS, uid: 'c1' }, store);
    await names.settle(store, settleHooks([]));
    const cacheName: MarkedName = { ...ORDERS_NAME, owner: 'cache' };
    expect(reopened().known(cacheName)).toEqual({ uid: 'c1', shards: 2 });
    names.forget('cache', ORDERS);
    await names.settle(store, settleHooks([]));
    expect(store.known(cacheName)).toBeNull();
    expect(reopened().known(cacheName)).toBeNull();
    // A control plane that assigns no creation ids: nothing to compare, nothing held back.
    names.observe('stream', ORDERS, store);
    expect(names.pending('stream', 't', 'ns', 'orders')).toBe(false);
  });

  it('an_unreadable_incarnation_file_adopts_the_files_rather_than_discarding_them', async () => {
    const names = new NameIncarnations(log);
    names.observe('stream', { ...ORDERS, uid: 'first' }, store);
    await names.settle(store, settleHooks([]));
    const [file] = await nodeIo.readdir(join(dir, 'names', 'stream'));
    await writeFile(join(dir, 'names', 'stream', file!), '{"uid": 7}');
    const discarded: DeletedName[] = [];
    const restarted = new NameIncarnations(log);
    const again = reopened();
    expect(warnings).toEqual(['an unreadable name incarnation file is rewritten']);
    restarted.observe('stream', { ...ORDERS, uid: 'second' }, again);
    expect(restarted.pending('stream', 't', 'ns', 'orders')).toBe(false);
    await restarted.settle(again, settleHooks(discarded));
    expect(discarded).toEqual([]);
    const bytes = await readFile(join(dir, 'names', 'stream', file!));
    expect(decodeNameMarker(bytes)).toEqual({ uid: 'second', shards: 2 });
  });

  it('the_name_incarnation_decoder_refuses_any_other_bytes_with_its_typed_error', () => {
    const good = { uid: 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6', shards: 3 };
    expect(decodeNameMarker(encodeNameMarker(good))).toEqual(good);
    expect(() => decodeNameMarker(new Uint8Array(NAME_MARKER_BYTES_MAX + 1))).toThrow(
      NameMarkerError,
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: NAME_MARKER_BYTES_MAX + 8 }), (bytes) => {
        try {
          const m = decodeNameMarker(bytes);
          // Whatever decodes is what the encoder would write for it.
          expect(decodeNameMarker(encodeNameMarker(m))).toEqual(m);
        } catch (err) {
          expect(err).toBeInstanceOf(NameMarkerError);
        }
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          decodeNameMarker(new TextEncoder().encode(JSON.stringify(value)));
        } catch (err) {
          expect(err).toBeInstanceOf(NameMarkerError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
