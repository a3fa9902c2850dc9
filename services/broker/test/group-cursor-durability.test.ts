// Goal: a consumer group's cursor durability is the operator's choice per stream. `onCommit`
// (the default) answers an ack only after the cursor covering it is fsynced, so a record acked
// with every record before it is never redelivered after a SIGKILL (one acked above a record
// still claimed is, since the cursor is one offset); `periodic` answers an ack once settled in memory and
// writes the cursor within its interval (and at a clean stop), so a SIGKILL redelivers at most
// what was acked since the last write and loses nothing. The settings are validated at startup.
// Method: loadConfig on temp files; real broker processes (@felix/testing-e2e) stopped with
// SIGTERM or killed with SIGKILL and restarted on the same data, driven through @felix/client.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type FelixClient, connect } from '@felix/client';
import { type BrokerProcess, type BrokerSpec, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/index.js';

const YAML = `
streams:
  - { tenant: t1, name: strict, durable: true }
  - { tenant: t1, name: slow, durable: true, group_cursor_fsync: periodic,
      group_cursor_fsync_interval_ms: 60000 }
  - { tenant: t1, name: quick, durable: true, group_cursor_fsync: periodic,
      group_cursor_fsync_interval_ms: 200 }
`;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function scratch(): Promise<string> {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  return dir.path;
}

async function clientOf(b: BrokerProcess): Promise<FelixClient> {
  const felix = await connect({
    servers: [b.url('tls')],
    tenant: 't1',
    tls: { fingerprint: b.fingerprint },
    reconnect: { baseMs: 20, maxDelayMs: 200 },
  });
  cleanups.push(() => felix.close());
  return felix;
}

/** A durable broker of YAML on `dir`; a restart passes the ports of the one before. */
async function broker(dir: string, again?: BrokerProcess): Promise<BrokerProcess> {
  const spec: BrokerSpec = { yaml: YAML, dir, durable: true };
  const b = await startBroker(
    again ? { ...spec, port: again.port, httpPort: again.httpPort } : spec,
  );
  cleanups.push(() => b.stop());
  return b;
}

/** Publishes `n` jobs to `stream`; answers their offsets. */
async function publish(felix: FelixClient, stream: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await felix.publish(stream, `job-${i}`)).offset!);
  return out;
}

/** Takes one job and acks it, `n` times; answers the acked offsets. */
async function ackOneAtATime(felix: FelixClient, stream: string, n: number): Promise<number[]> {
  const g = felix.group(stream, 'workers', { shard: 0 });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const [m] = await g.poll({ max: 1, waitMs: 5_000 });
    await m!.ack();
    out.push(m!.offset);
  }
  return out;
}

/** Everything the group hands out now (claims taken with a long visibility, never acked). */
async function drain(felix: FelixClient, stream: string): Promise<number[]> {
  const g = felix.group(stream, 'workers', { shard: 0 });
  const out: number[] = [];
  for (;;) {
    const got = await g.poll({ max: 100, waitMs: 200, visibilityMs: 60_000 });
    if (got.length === 0) return out;
    out.push(...got.map((m) => m.offset));
  }
}

const committed = async (felix: FelixClient, stream: string) =>
  (await felix.group(stream, 'workers', { shard: 0 }).describe()).committed;

describe('group cursor durability', () => {
  it('after_a_sigkill_an_on_commit_group_never_redelivers_an_acked_record', async () => {
    const dir = await scratch();
    const first = await broker(dir);
    const a = await clientOf(first);
    const offsets = await publish(a, 'strict', 5);
    const acked = await ackOneAtATime(a, 'strict', 3);
    expect(acked).toEqual(offsets.slice(0, 3));
    // Every answered ack is already durable: nothing is owed to a timer.
    expect(await committed(a, 'strict')).toBe(offsets[3]);
    await first.kill();
    const b = await clientOf(await broker(dir, first));
    expect(await drain(b, 'strict')).toEqual(offsets.slice(3));
  });

  it('after_a_sigkill_an_ack_above_an_unfinished_record_is_delivered_again', async () => {
    // The cursor is one offset (wire-storage 3.7): acks above a record still claimed are kept
    // in memory only, so a crash delivers them again (at least once), never loses a record.
    const dir = await scratch();
    const first = await broker(dir);
    const a = await clientOf(first);
    const offsets = await publish(a, 'strict', 4);
    const g = a.group('strict', 'workers', { shard: 0 });
    const got = await g.poll({ max: 3, waitMs: 5_000, visibilityMs: 60_000 });
    expect(got.map((m) => m.offset)).toEqual(offsets.slice(0, 3));
    await got[1]!.ack();
    await got[2]!.ack();
    expect(await committed(a, 'strict')).toBe(offsets[0]);
    await first.kill();
    const b = await clientOf(await broker(dir, first));
    expect(await drain(b, 'strict')).toEqual(offsets);
  });

  it('a_periodic_group_answers_an_ack_before_its_cursor_is_written_and_a_clean_stop_writes_it', async () => {
    const dir = await scratch();
    const first = await broker(dir);
    const a = await clientOf(first);
    const offsets = await publish(a, 'slow', 4);
    await ackOneAtATime(a, 'slow', 3);
    // Answered, yet the cursor (60 s interval) was never written past where the group started
    // (its first poll writes that, so the group is known after a restart).
    expect(await committed(a, 'slow')).toBe(offsets[0]);
    await first.stop(); // SIGTERM: the drain writes what periodic groups owe
    const b = await clientOf(await broker(dir, first));
    expect(await committed(b, 'slow')).toBe(offsets[3]);
    expect(await drain(b, 'slow')).toEqual(offsets.slice(3));
  });

  it('a_periodic_groups_cursor_becomes_durable_within_its_interval', async () => {
    const dir = await scratch();
    const first = await broker(dir);
    const a = await clientOf(first);
    const offsets = await publish(a, 'quick', 4);
    await ackOneAtATime(a, 'quick', 2);
    // Nothing else settles: the group's own timer (200 ms) writes the cursor.
    await waitFor(
      async () => (await committed(a, 'quick')) === offsets[2],
      'the periodic cursor write',
      10_000,
    );
    await first.kill();
    const b = await clientOf(await broker(dir, first));
    expect(await drain(b, 'quick')).toEqual(offsets.slice(2));
  });

  it('after_a_sigkill_a_periodic_group_redelivers_at_most_its_last_interval_and_loses_nothing', async () => {
    const dir = await scratch();
    const first = await broker(dir);
    const a = await clientOf(first);
    const offsets = await publish(a, 'quick', 10);
    await ackOneAtATime(a, 'quick', 3);
    await waitFor(
      async () => (await committed(a, 'quick')) === offsets[3],
      'the first cursor write',
      10_000,
    );
    // Acked after the write seen above: these alone may come back.
    const recent = await ackOneAtATime(a, 'quick', 4);
    const durable = (await committed(a, 'quick'))!;
    await first.kill();
    const b = await clientOf(await broker(dir, first));
    const again = await drain(b, 'quick');
    // The restart resumes at the last cursor written: nothing below it comes back, nothing
    // acked before the interval began comes back, and every unacked job does.
    expect(again[0]).toBeGreaterThanOrEqual(durable);
    expect(again).toEqual(offsets.slice(offsets.indexOf(again[0]!)));
    for (const o of offsets.slice(0, 3)) expect(again).not.toContain(o);
    for (const o of offsets.slice(7)) expect(again).toContain(o);
    expect(again.filter((o) => o < offsets[7]!).every((o) => recent.includes(o))).toBe(true);
  });
});

describe('group cursor durability settings', () => {
  async function yaml(body: string): Promise<string> {
    const path = join(await scratch(), 'broker.yaml');
    await writeFile(path, body);
    return path;
  }
  const env = (path: string, extra: Record<string, string> = {}) => ({
    FELIX_BROKER_CONFIG: path,
    FELIX_DURABLE_STORAGE_DIR: '/tmp/felix-unused',
    ...extra,
  });

  it('a_group_describe_names_the_groups_cursor_durability', async () => {
    const a = await clientOf(await broker(await scratch()));
    for (const stream of ['strict', 'quick']) {
      await publish(a, stream, 1);
      await ackOneAtATime(a, stream, 1);
    }
    const info = (stream: string) => a.group(stream, 'workers', { shard: 0 }).describe();
    expect((await info('strict')).cursorFsync).toBe('onCommit');
    expect((await info('quick')).cursorFsync).toBe('periodic');
  });

  it('a_group_cursor_durability_is_on_commit_unless_the_broker_or_the_stream_names_periodic', async () => {
    const path = await yaml(`
streams:
  - { tenant: t1, name: plain, durable: true }
  - { tenant: t1, name: own, durable: true, group_cursor_fsync: periodic,
      group_cursor_fsync_interval_ms: 50 }
`);
    const cfg = loadConfig(env(path));
    expect(cfg.groups.cursor_fsync).toBe('onCommit');
    expect(cfg.groups.cursor_fsync_interval_ms).toBe(250);
    expect(cfg.streams[0]!.group_cursor_fsync).toBeUndefined();
    expect(cfg.streams[1]).toMatchObject({
      group_cursor_fsync: 'periodic',
      group_cursor_fsync_interval_ms: 50,
    });
    const broad = loadConfig(
      env(path, {
        FELIX_GROUP_CURSOR_FSYNC: 'periodic',
        FELIX_GROUP_CURSOR_FSYNC_INTERVAL_MS: '1000',
      }),
    );
    expect(broad.groups).toMatchObject({
      cursor_fsync: 'periodic',
      cursor_fsync_interval_ms: 1000,
    });
  });

  it('a_bad_group_cursor_durability_setting_is_a_startup_error_naming_it', async () => {
    const plain = await yaml('streams: []\n');
    expect(() => loadConfig(env(plain, { FELIX_GROUP_CURSOR_FSYNC: 'none' }))).toThrow(
      /groups\.cursor_fsync/,
    );
    expect(() => loadConfig(env(plain, { FELIX_GROUP_CURSOR_FSYNC_INTERVAL_MS: '0' }))).toThrow(
      /groups\.cursor_fsync_interval_ms/,
    );
    expect(() => loadConfig(env(plain, { FELIX_GROUP_CURSOR_FSYNC_INTERVAL_MS: '60001' }))).toThrow(
      /groups\.cursor_fsync_interval_ms/,
    );
    const mode = await yaml(
      'streams:\n  - { tenant: t1, name: s, durable: true, group_cursor_fsync: always }\n',
    );
    expect(() => loadConfig(env(mode))).toThrow(/streams\[0\]\.group_cursor_fsync/);
    const interval = await yaml(
      'streams:\n  - { tenant: t1, name: s, durable: true, group_cursor_fsync_interval_ms: 0 }\n',
    );
    expect(() => loadConfig(env(interval))).toThrow(/streams\[0\]\.group_cursor_fsync_interval_ms/);
  });
});
