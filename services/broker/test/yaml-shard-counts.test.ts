// Goal: a standalone broker records the shard count each YAML stream and cache was first
// served with, and refuses a YAML that names another one before any log opens (keys would route
// to shards that never held them: found by a new-user trial, where 8 of 20 cache keys read as
// absent after a restart with `shards: 4` for 2); its record file decodes strictly.
// Method: checkYamlShardCounts over a temp data dir with loaded configs; the decoder fuzzed.
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeIo } from '@felix/storage';
import { tempDir } from '@felix/testing-harness';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkYamlShardCounts,
  decodeShardCount,
  encodeShardCount,
} from '../src/catalog/yaml-shard-counts.js';
import { loadConfig } from '../src/config/load.js';
import { ShardCountChangedError, ShardCountMarkerError } from '../src/errors.js';
import { NAME_MARKER_BYTES_MAX } from '../src/limits.js';

async function configWith(dir: string, yaml: string) {
  const path = join(dir, `broker-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(path, yaml);
  return loadConfig({ FELIX_BROKER_CONFIG: path, FELIX_DURABLE_STORAGE_DIR: join(dir, 'data') });
}

describe('yaml shard counts', () => {
  it('a_standalone_broker_refuses_a_yaml_that_changed_a_shard_count_its_data_was_written_with', async () => {
    const dir = await tempDir();
    try {
      const data = join(dir.path, 'data');
      const warnings: string[] = [];
      const warn = (_: object, msg: string) => warnings.push(msg);
      const first = await configWith(
        dir.path,
        `streams:\n  - { tenant: t1, name: orders, shards: 2, durable: true }\n  - { tenant: t1, name: ticks, shards: 2 }\ncaches:\n  - { tenant: t1, name: users, shards: 2 }\n`,
      );
      await checkYamlShardCounts(first, data, nodeIo, warn);
      // The same counts start again; an in-memory stream keeps nothing, so its count may change.
      const same = await configWith(
        dir.path,
        `streams:\n  - { tenant: t1, name: orders, shards: 2, durable: true }\n  - { tenant: t1, name: ticks, shards: 5 }\ncaches:\n  - { tenant: t1, name: users, shards: 2 }\n`,
      );
      await checkYamlShardCounts(same, data, nodeIo, warn);
      for (const changed of [
        `streams:\n  - { tenant: t1, name: orders, shards: 3, durable: true }\n`,
        `caches:\n  - { tenant: t1, name: users, shards: 1 }\n`,
      ]) {
        const cfg = await configWith(dir.path, changed);
        await expect(checkYamlShardCounts(cfg, data, nodeIo, warn)).rejects.toThrow(
          ShardCountChangedError,
        );
      }
      // An unreadable record is written again from the YAML, with a warning, never refused.
      const [file] = await readdir(join(data, 'yaml-shards', 'cache'));
      await writeFile(join(data, 'yaml-shards', 'cache', file!), 'not json');
      const grown = await configWith(
        dir.path,
        `caches:\n  - { tenant: t1, name: users, shards: 3 }\n`,
      );
      await checkYamlShardCounts(grown, data, nodeIo, warn);
      expect(warnings).toEqual(['an unreadable shard count file is written again']);
      await expect(checkYamlShardCounts(same, data, nodeIo, warn)).rejects.toThrow(
        /cache t1\/default\/users was written with 3 shards/,
      );
    } finally {
      await dir.cleanup();
    }
  });

  it('the_shard_count_file_decoder_refuses_any_other_bytes_with_its_typed_error', () => {
    expect(decodeShardCount(encodeShardCount(7))).toBe(7);
    expect(() => decodeShardCount(new Uint8Array(NAME_MARKER_BYTES_MAX + 1))).toThrow(
      ShardCountMarkerError,
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: NAME_MARKER_BYTES_MAX + 8 }), (bytes) => {
        try {
          const n = decodeShardCount(bytes);
          expect(decodeShardCount(encodeShardCount(n))).toBe(n);
        } catch (err) {
          expect(err).toBeInstanceOf(ShardCountMarkerError);
        }
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          decodeShardCount(new TextEncoder().encode(JSON.stringify(value)));
        } catch (err) {
          expect(err).toBeInstanceOf(ShardCountMarkerError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
