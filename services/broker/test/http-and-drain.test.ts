// Goal: the operator surface of a real broker process: /live, /ready and /metrics answer, and
// SIGTERM drains (in-flight acks are answered) and exits 0 within its bound.
// Method: spawn felix-broker, talk HTTP and the client to it, signal it.
import { connect } from '@felix/client';
import { tempDir } from '@felix/testing-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { type BrokerProcess, startBroker } from '@felix/testing-e2e';

const YAML = 'streams:\n  - { tenant: t1, name: demo }\n';
let broker: BrokerProcess | undefined;
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await broker?.kill();
  await cleanup?.();
  broker = undefined;
});

describe('broker process', () => {
  it('the_http_listener_answers_live_ready_and_metrics', async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({ yaml: YAML, dir: dir.path });
    const base = `http://127.0.0.1:${broker.httpPort}`;
    expect((await fetch(`${base}/live`)).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(200);
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
    });
    await felix.publish('demo', 'x');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/felix_broker_connections\{transport="tls"\} 1/);
    expect(metrics).toMatch(/felix_broker_published_records_total 1/);
    expect(metrics).toMatch(/felix_broker_streams\{durable="false"\} 1/);
    expect(metrics).toContain('felix_broker_fanout_queue_depth_max');
    expect(metrics).toContain('felix_broker_append_seconds_bucket');
    await felix.close();
  });

  it('sigterm_drains_and_exits_within_its_bound', async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    broker = await startBroker({
      yaml: YAML,
      dir: dir.path,
      env: { FELIX_BROKER_DRAIN_TIMEOUT_MS: '5000' },
    });
    const felix = await connect({
      servers: [broker.url('tls')],
      tenant: 't1',
      tls: { fingerprint: broker.fingerprint },
      reconnect: { attemptsMax: 1 },
    });
    const acked = await Promise.all(
      Array.from({ length: 50 }, (_, i) => felix.publish('demo', `m${i}`)),
    );
    expect(acked.map((a) => a.offset)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    broker.child.proc.kill('SIGTERM');
    const exit = await broker.child.exited;
    expect(exit.code).toBe(0);
    expect(broker.child.stdout()).toContain('"msg":"stopped"');
    await felix.close();
  });
});
