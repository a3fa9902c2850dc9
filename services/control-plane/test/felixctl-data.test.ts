// Goal: felixctl's data-plane verbs (pub, sub, cache, counter, group, bench, context) work as a
// person types them: the real built felixctl as a process, against a real control plane and
// broker, with output, exit codes and error lines checked. Method: one cluster from
// @felix/testing-cluster (control plane + one broker, real tokens, TLS by the cluster's CA);
// felixctl spawned from dist/ with its connection settings in FELIX_* variables.
import { spawn } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type FelixCluster, startCluster } from '@felix/testing-cluster';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FELIXCTL, RUN_DEADLINE_MS, type Run, startFelixctl } from './felixctl-process.js';

let cluster: FelixCluster;
let home: Awaited<ReturnType<typeof tempDir>>;
let env: Record<string, string>;

beforeAll(async () => {
  home = await tempDir('felixctl-data');
  cluster = await startCluster({
    brokers: 1,
    streams: [
      { name: 'events', shards: 1 },
      { name: 'lines', shards: 1 },
      { name: 'quiet', shards: 1 },
      { name: 'jobs', shards: 1 },
      { name: 'benched', shards: 1 },
      { name: 'fire', shards: 1 },
      { name: 'graveyard', shards: 1 },
      { name: 'piped', shards: 1 },
      { name: 'spread', shards: 3 },
    ],
    caches: [{ name: 'kv' }],
  });
  await cluster.waitServed();
  const ca = join(home.path, 'ca.pem');
  await writeFile(ca, cluster.caPem);
  const o = cluster.clientOptions();
  env = {
    FELIX_SERVERS: o.servers.join(','),
    FELIX_TENANT: o.tenant,
    FELIX_TOKEN: String(o.token),
    FELIX_CA: ca,
    FELIX_SERVER_NAME: 'localhost',
  };
}, 120_000);
afterAll(async () => {
  await cluster?.shutdown();
  await home?.cleanup();
});

/** A running felixctl: its output so far and its end. */
function start(args: string[], opts: { input?: string; env?: Record<string, string> } = {}) {
  return startFelixctl(home.path, opts.env ?? env, args, opts.input ?? '');
}

function ctl(...args: string[]): Promise<Run> {
  return start(args).done;
}

describe('felixctl data verbs', () => {
  it('felixctl_pub_then_sub_from_earliest_prints_every_record_in_order', async () => {
    const file = join(home.path, 'record.txt');
    await writeFile(file, 'from a file');
    const one = await ctl('pub', 'events', 'first');
    expect(one.code, one.err).toBe(0);
    expect(one.out).toEqual(['published events shard 0 offset 0']);
    expect((await ctl('pub', 'events', '--file', file)).code).toBe(0);
    const lines = await start(['pub', 'events'], { input: 'l1\nl2\nl3\n' }).done;
    expect(lines.code, lines.err).toBe(0);
    expect(lines.out).toEqual([2, 3, 4].map((o) => `published events shard 0 offset ${o}`));
    const sub = await ctl('sub', 'events', '--from', 'earliest', '--count', '5');
    expect(sub.code, sub.err).toBe(0);
    expect(sub.out).toEqual(['0 first', '1 from a file', '2 l1', '3 l2', '4 l3']);
    const fromOffset = await ctl('sub', 'events', '--from', '3', '--count', '2');
    expect(fromOffset.out).toEqual(['3 l2', '4 l3']);
  });

  it('felixctl_sub_json_prints_one_object_per_line_with_stream_shard_offset_key_value_and_time', async () => {
    const before = Date.now();
    await start(['pub', 'lines', '--key', 'k1'], { input: 'a\nb\n' }).done;
    const r = await ctl('--json', 'sub', 'lines', '--from', '10m', '--count', '2');
    expect(r.code, r.err).toBe(0);
    const rows = r.out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((x) => [x.stream, x.shard, x.offset, x.key, x.value])).toEqual([
      ['lines', 0, 0, null, 'a'],
      ['lines', 0, 1, null, 'b'],
    ]);
    for (const x of rows) expect(Date.parse(String(x.time))).toBeGreaterThanOrEqual(before - 5_000);
  });

  it('felixctl_sub_until_end_stops_after_the_last_stored_record', async () => {
    await start(['pub', 'quiet'], { input: 'q0\nq1\nq2\n' }).done;
    const r = await ctl('sub', 'quiet', '--from', 'earliest', '--until-end', '--idle', '1s');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toEqual(['0 q0', '1 q1', '2 q2']);
  });

  it('felixctl_pub_no_ack_records_all_reach_the_stream_before_it_exits', async () => {
    for (const v of ['f0', 'f1'])
      expect((await ctl('pub', 'fire', '--no-ack', v)).out).toEqual(['sent 1 record(s) to fire']);
    const many = Array.from({ length: 500 }, (_, i) => `m${i}`);
    const r = await start(['pub', 'fire', '--no-ack'], { input: `${many.join('\n')}\n` }).done;
    expect(r.out).toEqual(['sent 500 record(s) to fire']);
    const sub = await ctl('sub', 'fire', '--from', 'earliest', '--count', '502');
    expect(sub.out.map((l) => l.split(' ')[1])).toEqual(['f0', 'f1', ...many]);
  });

  it('felixctl_exits_quietly_when_its_reader_closes_the_output_early', async () => {
    // `felixctl sub ... | head`: the reader goes away while a live `sub` still prints. Before,
    // the next write threw an unhandled EPIPE with a stack trace and exit 1.
    const lines = Array.from({ length: 3000 }, (_, i) => `r${i}`);
    expect(
      (await start(['pub', 'piped', '--no-ack'], { input: `${lines.join('\n')}\n` }).done).code,
    ).toBe(0);
    const child = spawn(process.execPath, [FELIXCTL, 'sub', 'piped', '--from', 'earliest'], {
      env: { PATH: process.env.PATH ?? '', HOME: home.path, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => {
      err += String(d);
    });
    child.stdout.once('data', () => child.stdout.destroy());
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_DEADLINE_MS);
    const code = await new Promise<number | null>((res) => child.on('close', res));
    clearTimeout(timer);
    expect(err).not.toContain('EPIPE');
    expect(code, err).toBe(0);
  });

  it('felixctl_cache_puts_gets_deletes_and_watches_keys_by_prefix', async () => {
    expect((await ctl('cache', 'put', 'kv', 'user:1', 'alice', '--ttl', '1h')).code).toBe(0);
    expect((await ctl('cache', 'get', 'kv', 'user:1')).out).toEqual(['alice']);
    const watch = start([
      'cache',
      'watch',
      'kv',
      '--prefix',
      'user:',
      '--retained',
      '--count',
      '3',
    ]);
    await waitFor(() => watch.output().includes('now live'), 'the watch to be live', 30_000);
    expect((await ctl('cache', 'put', 'kv', 'user:2', 'bob')).code).toBe(0);
    expect((await ctl('cache', 'delete', 'kv', 'user:1')).out).toEqual([
      'deleted user:1 from cache kv',
    ]);
    const w = await watch.done;
    expect(w.code, w.err).toBe(0);
    expect(w.out).toEqual([
      'put user:1 alice',
      '-- 1 retained, now live --',
      'put user:2 bob',
      'delete user:1',
    ]);
    const gone = await ctl('cache', 'get', 'kv', 'user:1');
    expect(gone.code).toBe(4);
    expect(gone.out).toEqual([]);
  });

  it('felixctl_counter_add_prints_the_running_sum_and_get_reads_it', async () => {
    expect((await ctl('counter', 'add', 'kv', 'hits', '5')).out).toEqual(['5']);
    expect((await ctl('counter', 'add', 'kv', 'hits', '--', '-2')).out).toEqual(['3']);
    const got = await ctl('--json', 'counter', 'get', 'kv', 'hits');
    expect(JSON.parse(got.out[0] ?? '')).toEqual({ counter: 'kv', key: 'hits', sum: '3' });
    expect((await ctl('counter', 'get', 'kv', 'never')).code).toBe(4);
  });

  it('felixctl_group_poll_hands_out_and_acks_records_and_describe_shows_the_position', async () => {
    await start(['pub', 'jobs'], { input: 'j0\nj1\nj2\n' }).done;
    // A group sees records once they are durable: on a loaded machine that can take longer than
    // the default 1 s wait, after which the poll answers empty. It answers as soon as they are.
    const poll = await ctl('group', 'poll', 'jobs', 'workers', '--max', '2', '--wait', '10s');
    expect(poll.code, poll.err).toBe(0);
    expect(poll.out).toEqual(['0 attempts=1 j0', '1 attempts=1 j1']);
    const d = await ctl('--json', 'group', 'describe', 'jobs', 'workers');
    expect(d.code, d.err).toBe(0);
    expect(JSON.parse(d.out[0] ?? '')).toMatchObject({ committed: 2, tail: 3, deadLetters: 0 });
    const kept = await ctl('group', 'poll', 'jobs', 'workers', '--no-ack', '--visibility', '60s');
    expect(kept.out).toEqual(['2 attempts=1 j2']);
    const held = await ctl('--json', 'group', 'describe', 'jobs', 'workers');
    expect(JSON.parse(held.out[0] ?? '')).toMatchObject({ committed: 2, inFlight: 1 });
    expect((await ctl('group', 'redrive', 'jobs', 'workers')).out).toEqual([
      'redrove 0 dead letter(s) of workers',
    ]);
  });

  it('felixctl_group_redrive_without_offsets_redrives_every_dead_letter_past_the_first_thousand', async () => {
    // One list answers at most 1,000 dead letters: before, `redrive` with no offsets sent back
    // the first 1,000 and said so, leaving the rest dead.
    const c = await cluster.connect();
    try {
      const total = 1_005;
      await c.publishBatch(
        'graveyard',
        Array.from({ length: total }, (_, i) => `d${i}`),
      );
      const g = c.group('graveyard', 'undertaker', { shard: 0 });
      let dead = 0;
      while (dead < total) {
        const got = await g.poll({ max: 1_000, waitMs: 10_000, visibilityMs: 60_000 });
        await Promise.all(got.map((m) => m.deadLetter()));
        dead += got.length;
      }
      expect((await g.describe()).deadLetters).toBe(total);
      const run = await ctl('group', 'redrive', 'graveyard', 'undertaker');
      expect(run.code, run.err).toBe(0);
      expect(run.out).toEqual([`redrove ${total} dead letter(s) of undertaker`]);
      expect((await g.describe()).deadLetters).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('felixctl_group_describe_and_redrive_with_shard_all_cover_every_shard', async () => {
    const c = await cluster.connect();
    try {
      for (let i = 0; i < 30; i++) await c.publish('spread', `s${i}`, { key: `k${i}` });
      // One record of each shard given up on.
      const all = c.group('spread', 'auditors', { shard: 'all' });
      for (const g of await all.shards()) {
        const [m] = await g.poll({ max: 1, waitMs: 10_000, visibilityMs: 60_000 });
        await m!.deadLetter();
      }
      const d = await ctl('--json', 'group', 'describe', 'spread', 'auditors', '--shard', 'all');
      expect(d.code, d.err).toBe(0);
      const rows = d.out.map((l) => JSON.parse(l));
      expect(rows.map((r) => [r.shard, r.deadLetters])).toEqual([
        [0, 1],
        [1, 1],
        [2, 1],
      ]);
      const table = await ctl('group', 'describe', 'spread', 'auditors', '--shard', 'all');
      expect(table.out).toHaveLength(4); // the header and a row per shard
      const run = await ctl('group', 'redrive', 'spread', 'auditors', '--shard', 'all');
      expect(run.out).toEqual(['redrove 3 dead letter(s) of auditors']);
      for (const info of await all.describe()) expect(info).toMatchObject({ deadLetters: 0 });
      // poll takes one shard; offsets are a shard's own.
      const poll = await ctl('group', 'poll', 'spread', 'auditors', '--shard', 'all');
      expect([poll.code, poll.err]).toEqual([2, expect.stringMatching(/poll takes one shard/)]);
      const named = await ctl('group', 'redrive', 'spread', 'auditors', '3', '--shard', 'all');
      expect(named.code).toBe(2);
      // A group that exists on one shard only (the default handle's): the others are rows
      // marked missing, and a redrive over every shard skips them (before, both failed with
      // not_found, the redrive after it had redriven shard 0).
      await c.group('spread', 'zero-only').seek('latest');
      const partial = await ctl(
        '--json',
        'group',
        'describe',
        'spread',
        'zero-only',
        '--shard',
        'all',
      );
      expect(partial.code, partial.err).toBe(0);
      expect(
        partial.out.map((l) => JSON.parse(l)).map((r) => [r.shard, r.missing ?? false]),
      ).toEqual([
        [0, false],
        [1, true],
        [2, true],
      ]);
      const skip = await ctl('group', 'redrive', 'spread', 'zero-only', '--shard', 'all');
      expect([skip.code, skip.out]).toEqual([0, ['redrove 0 dead letter(s) of zero-only']]);
      const json = await ctl('--json', 'group', 'redrive', 'spread', 'zero-only', '--shard', 'all');
      expect(JSON.parse(json.out[0] ?? '')).toEqual({
        stream: 'spread',
        group: 'zero-only',
        redrove: 0,
      });
      const upper = await ctl('group', 'describe', 'spread', 'zero-only', '--shard', 'ALL');
      expect([upper.code, upper.err]).toEqual([
        2,
        expect.stringMatching(/a shard number or `all`/),
      ]);
    } finally {
      await c.close();
    }
  });

  it('felixctl_bench_pub_and_sub_report_rate_bytes_and_latency_percentiles', async () => {
    const pub = await ctl('--json', 'bench', 'pub', 'benched', '--count', '2000', '--size', '64');
    expect(pub.code, pub.err).toBe(0);
    const p = JSON.parse(pub.out[0] ?? '');
    expect(p).toMatchObject({ bench: 'pub', records: 2000, bytes: 128_000, latency: 'ack' });
    expect(p.records_per_second).toBeGreaterThan(0);
    expect(p.latency_us.p50).toBeLessThanOrEqual(p.latency_us.p99);
    const nack = await ctl('--json', 'bench', 'pub', 'benched', '--count', '1000', '--no-ack');
    expect(JSON.parse(nack.out[0] ?? '')).toMatchObject({ records: 1001, latency: 'write' });
    const sub = await ctl('bench', 'sub', 'benched', '--count', '3001');
    expect(sub.code, sub.err).toBe(0);
    expect(sub.out[0]).toMatch(/^METRIC\s+VALUE$/);
    expect(sub.out).toContainEqual(expect.stringMatching(/^records\s+3001$/));
    expect(sub.out).toContainEqual(expect.stringMatching(/^e2e latency p99\s+\d+ µs$/));
  });

  it('felixctl_context_stores_settings_only_its_owner_can_read_and_never_prints_the_token', async () => {
    const o = cluster.clientOptions();
    const noEnv = { PATH: process.env.PATH ?? '' };
    const args = [
      '--server',
      o.servers.join(','),
      '--tenant',
      o.tenant,
      '--token',
      String(o.token),
    ];
    const add = await start(
      ['context', 'add', 'local', ...args, '--ca', env.FELIX_CA!, '--server-name', 'localhost'],
      { env: noEnv },
    ).done;
    expect(add.code, add.err).toBe(0);
    const path = join(home.path, 'config', 'felix', 'contexts.json');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8')).current).toBe('local');
    const token = String(o.token);
    for (const argv of [
      ['context', 'ls'],
      ['context', 'show'],
      ['--json', 'context', 'show', 'local'],
    ]) {
      const r = await start(argv, { env: noEnv }).done;
      expect(r.code, r.err).toBe(0);
      expect(r.out.join('\n')).not.toContain(token.slice(10));
    }
    // With nothing in the environment, the data verbs connect by the current context.
    const pub = await start(['pub', 'events', 'by-context'], { env: noEnv }).done;
    expect(pub.code, pub.err).toBe(0);
    expect((await start(['context', 'rm', 'local'], { env: noEnv }).done).code).toBe(0);
    const none = await start(['pub', 'events', 'x'], { env: noEnv }).done;
    expect(none.code).toBe(2);
    expect(none.err).toContain('FELIX_CTL_USAGE: no broker address');
  });

  it('felixctl_context_add_refuses_an_empty_setting_instead_of_storing_it', async () => {
    // A new user's trial: `context add --token "$TOKEN"` with the variable unset stored an empty
    // token, and every data verb then failed with "no token given".
    const noEnv = { PATH: process.env.PATH ?? '' };
    const o = cluster.clientOptions();
    const add = await start(
      ['context', 'add', 'empty', '--server', o.servers.join(','), '--token', ''],
      { env: noEnv },
    ).done;
    expect(add.code).toBe(2);
    expect(add.err).toContain('FELIX_CTL_USAGE: --token is empty');
    const listed = await start(['context', 'ls'], { env: noEnv }).done;
    expect(listed.out.join('\n')).not.toContain('empty');
  });

  it('felixctl_data_errors_are_one_line_with_code_and_hint_and_exit_by_kind', async () => {
    const oneLine = (r: Run) => {
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).not.toMatch(/^\s+at /m);
    };
    const missing = await ctl('pub', 'no-such-stream', 'x');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^felixctl: FELIX_CLIENT_NOT_FOUND \(not_found\): .*; hint: /);
    // The command the hint names runs as written (streams list takes a tenant and a namespace).
    expect(missing.err).toContain('felixctl streams list <tenant> <namespace>');
    oneLine(missing);
    const badToken = await start(['pub', 'events', 'x'], { env: { ...env, FELIX_TOKEN: 'nope' } })
      .done;
    expect(badToken.code).toBe(1);
    expect(badToken.err).toContain('FELIX_CLIENT_UNAUTHENTICATED');
    oneLine(badToken);
    const down = await ctl(
      'pub',
      'events',
      'x',
      '--server',
      'quic://127.0.0.1:1',
      '--timeout',
      '1000',
    );
    expect(down.code).toBe(3);
    expect(down.err).toContain('FELIX_CLIENT_CONNECT');
    oneLine(down);
    const bad = await ctl('sub', 'events', '--from', 'yesterday-ish');
    expect(bad.code).toBe(2);
    oneLine(bad);
    const debug = await ctl('--debug', 'pub', 'no-such-stream', 'x');
    expect(debug.err).toMatch(/^\s+at /m);
  });
});
