// Goal: every way of starting the broker runs node with the same flags (node-flags.json), and
// this node accepts them.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const { flags } = JSON.parse(readFileSync(resolve(root, 'node-flags.json'), 'utf8')) as {
  flags: string[];
};

describe('broker node flags', () => {
  it('the_broker_bin_runs_node_with_the_flags_every_launcher_passes', () => {
    const shebang = readFileSync(resolve(root, 'src', 'main.ts'), 'utf8').split('\n')[0];
    expect(flags.length).toBeGreaterThan(0);
    expect(shebang).toBe(`#!/usr/bin/env -S node ${flags.join(' ')}`);
  });

  it('node_accepts_the_broker_node_flags', () => {
    const r = spawnSync(process.execPath, [...flags, '-e', 'process.exit(0)'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
