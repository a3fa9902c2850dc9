// Goal: the recorder writes the contract's lines: the meta line first, ids `<process>:<n>`, one
// clock that never goes back, exactly one completion per invoke (a late answer to an abandoned
// operation is dropped, an operation still open at the end is `info`), and it holds at most
// RECORDER_BUFFER_LINES_MAX lines before writing them out.
// Method: a Recorder on a temp file, driven directly; the file read back and parsed.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@felix/testing-harness';
import type { HistoryLine } from '@felix/testing-history';
import { describe, expect, it } from 'vitest';
import { RecorderStateError } from '../src/errors.js';
import { RECORDER_BUFFER_LINES_MAX } from '../src/limits.js';
import { Recorder } from '../src/recorder.js';

const META = { seed: 3, streams: [], groups: [], caches: ['c'], counters: [] };

describe('the recorder', () => {
  it('the_recorder_pairs_every_invoke_once_and_ends_open_operations_as_info', async () => {
    const dir = await tempDir();
    const path = join(dir.path, 'h.jsonl');
    try {
      const r = new Recorder(path, META);
      const a = r.invoke('cache-0', { f: 'cache_put', cache: 'c', key: 'k0', value: 'cache-0-0' });
      const b = r.invoke('cache-0', { f: 'cache_get', cache: 'c', key: 'k0' });
      const open = r.invoke('cache-1', { f: 'cache_get', cache: 'c', key: 'k1' });
      expect([a, b, open]).toEqual(['cache-0:1', 'cache-0:2', 'cache-1:1']);
      expect(r.complete(a, 'info', { error: 'no answer' })).toBe(true);
      // The answer that comes after the operation was abandoned is not a second completion.
      expect(r.complete(a, 'ok')).toBe(false);
      expect(r.complete(b, 'ok', { value: null })).toBe(true);
      r.observe('final', { f: 'cache_final', cache: 'c', key: 'k0', value: null });
      r.close();
      expect(() => r.invoke('cache-0', { f: 'cache_get', cache: 'c', key: 'k0' })).toThrow(
        RecorderStateError,
      );
      const lines = (await readFile(path, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as HistoryLine);
      expect(lines[0]).toEqual({
        f: 'meta',
        t: 0,
        process: 'campaign',
        phase: 'ok',
        id: 'meta',
        ...META,
      });
      expect(lines.map((l) => `${l.id} ${l.f} ${l.phase}`)).toEqual([
        'meta meta ok',
        'cache-0:1 cache_put invoke',
        'cache-0:2 cache_get invoke',
        'cache-1:1 cache_get invoke',
        'cache-0:1 cache_put info',
        'cache-0:2 cache_get ok',
        'final:1 cache_final ok',
        'cache-1:1 cache_get info',
      ]);
      const times = lines.map((l) => l.t);
      expect(times).toEqual([...times].sort((x, y) => x - y));
      expect(lines[5]).toMatchObject({ process: 'cache-0', value: null });
    } finally {
      await dir.cleanup();
    }
  });

  it('the_recorder_writes_out_once_it_holds_its_bound_of_lines', async () => {
    const dir = await tempDir();
    const path = join(dir.path, 'h.jsonl');
    try {
      const r = new Recorder(path, META);
      for (let i = 1; i < RECORDER_BUFFER_LINES_MAX; i++)
        r.observe('final', { f: 'counter_final', counter: 'c', key: `c${i}`, value: i });
      // Read at once, long before the recorder's interval: the bound alone wrote the lines.
      const written = (await readFile(path, 'utf8')).split('\n').length - 1;
      expect(written).toBe(RECORDER_BUFFER_LINES_MAX);
      expect(r.lines).toBe(RECORDER_BUFFER_LINES_MAX);
      r.close();
    } finally {
      await dir.cleanup();
    }
  });
});
