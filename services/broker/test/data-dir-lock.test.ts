// Goal: one broker per data directory. A second broker on a directory a running broker holds
// fails at start (non-zero exit, the directory and the holder's pid on stderr) and leaves the
// first one serving; a SIGTERM drain releases the directory, and a SIGKILLed broker's lock is
// taken over by the next start.
// Method: real broker processes (started by @felix/testing-e2e) over one temp directory.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { connect } from '@felix/client';
import { type Child, freePort, spawnNode, tempDir, withDeadline } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { type BrokerProcess, brokerArgs, startBroker } from '@felix/testing-e2e';

const YAML = 'streams:\n  - { tenant: t1, name: orders, durable: true, fsync: onCommit }\n';
const REPO = resolve(import.meta.dirname, '../../..');

const brokers: BrokerProcess[] = [];
const children: Child[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.kill()));
  await Promise.all(children.splice(0).map((c) => c.kill()));
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function scratch(): Promise<string> {
  const dir = await tempDir();
  cleanups.push(dir.cleanup);
  return dir.path;
}

async function start(dir: string): Promise<BrokerProcess> {
  const b = await startBroker({ yaml: YAML, dir, durable: true });
  brokers.push(b);
  return b;
}

/** A broker process on `dir`'s broker.yaml and `dir/data`, with no wait for it to listen. */
async function spawnBroker(dir: string): Promise<Child> {
  const child = spawnNode(brokerArgs(), {
    cwd: REPO,
    env: {
      FELIX_BROKER_CONFIG: join(dir, 'broker.yaml'),
      FELIX_AUTH_MODE: 'dev', // the lock is under test, not authentication
      FELIX_DURABLE_STORAGE_DIR: join(dir, 'data'),
      FELIX_BROKER_PORT: String(await freePort()),
      FELIX_BROKER_HTTP_PORT: String(await freePort()),
    },
  });
  children.push(child);
  return child;
}

describe('data directory lock', () => {
  it('a_second_broker_on_the_same_data_dir_fails_at_start_naming_the_holder', async () => {
    const dir = await scratch();
    const first = await start(dir);
    const dataDir = join(dir, 'data');
    const second = await spawnBroker(dir);
    const exit = await withDeadline(second.exited, 30_000, 'the second broker to exit');
    expect(exit.code).toBe(1);
    expect(second.stderr()).toContain(
      `felix-broker: ${dataDir} is locked by pid ${first.child.proc.pid}`,
    );
    expect(second.stderr()).toContain('[FELIX_STORAGE_DATA_DIR_LOCKED]');
    // The first broker still holds the directory and serves durable publishes.
    const felix = await connect({
      servers: [first.url('tls')],
      tenant: 't1',
      tls: { fingerprint: first.fingerprint },
    });
    expect((await felix.publish('orders', 'after the refused start')).offset).toBe(0);
    await felix.close();
  });

  it('a_drained_broker_releases_its_data_dir_and_a_sigkilled_ones_is_taken_over', async () => {
    const dir = await scratch();
    const lockFile = join(dir, 'data', 'felix.lock');
    const first = await start(dir);
    expect(existsSync(lockFile)).toBe(true);
    await first.stop();
    expect(first.child.proc.exitCode).toBe(0);
    expect(existsSync(lockFile)).toBe(false);
    const second = await start(dir);
    await second.kill();
    // The SIGKILLed broker's lock is left behind; the next start judges it stale.
    expect(existsSync(lockFile)).toBe(true);
    const third = await start(dir);
    const felix = await connect({
      servers: [third.url('tls')],
      tenant: 't1',
      tls: { fingerprint: third.fingerprint },
    });
    expect((await felix.publish('orders', 'x')).offset).toBe(0);
    await felix.close();
  });
  it('a_sigterm_during_startup_still_drains_and_releases_the_data_dir', async () => {
    const dir = await scratch();
    const dataDir = join(dir, 'data');
    await writeFile(join(dir, 'broker.yaml'), YAML);
    const child = await spawnBroker(dir);
    // "starting" is logged before the broker opens anything: the signal lands mid-start.
    await child.waitForOutput('"msg":"starting"', 'the broker to begin starting', 30_000);
    child.proc.kill('SIGTERM');
    const exit = await withDeadline(child.exited, 30_000, 'the broker to exit');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, 'felix.lock'))).toBe(false);
  });
});
