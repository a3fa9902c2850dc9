/**
 * The compose cluster end to end (`pnpm test:deploy`, Docker required): the images built by
 * deploy/docker/build-images.sh, started by deploy/compose/compose.yaml, reached from the host as
 * a user would (CA file, client token, the control plane's REST API, @felix/client). Prints the
 * cold start to three ready brokers, the image sizes and how long publishes paused when a
 * replicated stream's leader container was killed.
 */
import { type FelixClient as Felix, connect } from '@felix/client';
import { shardForKey } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BROKERS,
  type ClientFiles,
  ComposeCluster,
  NAMESPACE,
  TENANT,
  api,
  brokerReady,
  docker,
  leadersOf,
  until,
} from './cluster.js';

const COLD_START_MS_MAX = 90_000;
const READY_MS_MAX = 40_000;
/** FELIX_BROKER_DRAIN_TIMEOUT_MS's default: `docker stop` must return within it. */
const DRAIN_TIMEOUT_MS = 10_000;
const FELIX_UID = 10001;
/**
 * From the SIGKILL of a leader to the next acknowledged publish: the control plane's default
 * lease and margin (15 s + 3.75 s) and sweep before it names another leader (measured 18 s), then
 * the fence and open, and the client finding the new leader (in each run one publish ran into
 * its 30 s request timeout): measured 37 to 44 s in all, on a loaded machine.
 */
const FAILOVER_MS_MAX = 75_000;
/** Publishes acknowledged before the kill, and after it on the new leader. */
const ACKED_EACH_SIDE = 20;
const RETRY_PAUSE_MS = 50;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const cluster = new ComposeCluster();
let files: ClientFiles;

beforeAll(async () => {
  const started = Date.now();
  cluster.up();
  await Promise.all(
    BROKERS.map((b) =>
      until(`${b.name} to be ready`, () => brokerReady(b.http), COLD_START_MS_MAX),
    ),
  );
  console.log(`deploy: cold start to 3 ready brokers: ${Date.now() - started} ms`);
  for (const image of ['felix-broker', 'felix-control-plane']) {
    const bytes = Number(docker('image', 'inspect', '-f', '{{.Size}}', `${image}:local`).trim());
    console.log(`deploy: ${image}:local ${(bytes / 1e6).toFixed(0)} MB`);
  }
  files = cluster.files();
}, COLD_START_MS_MAX + 60_000);

afterAll(() => cluster.down(), 120_000);

const brokerByName = (name: string) => {
  const b = BROKERS.find((x) => x.name === name);
  if (!b) throw new Error(`unknown broker ${name}`);
  return b;
};

function connectTo(port: number, transport: 'quic' | 'tls' = 'quic'): Promise<Felix> {
  return connect({
    servers: [`${transport}://127.0.0.1:${port}`],
    tenant: TENANT,
    namespace: NAMESPACE,
    token: files.client,
    tls: { ca: files.ca },
  });
}

async function createStream(stream: string, shards: number): Promise<void> {
  await api(files.admin, 'POST', `/v1/tenants/${TENANT}/namespaces/${NAMESPACE}/streams`, {
    stream,
    shards,
    durable: true,
    replication_factor: 1,
  });
}

/** A routing key that lands on `shard` of a stream of `shards` shards. */
function keyFor(shard: number, shards: number): string {
  for (let i = 0; ; i++) {
    if (shardForKey(encoder.encode(`k${i}`), shards) === shard) return `k${i}`;
  }
}

/** Publishes once the leader has opened the shard (until then it answers shard_unavailable). */
function publishWhenOpen(felix: Felix, stream: string, body: string, key?: string) {
  return until(
    `a publish to ${stream} to be acknowledged`,
    () => felix.publish(stream, body, key === undefined ? {} : { key }),
    READY_MS_MAX,
  );
}

async function readRecords(felix: Felix, stream: string, shard: number, from: number, n: number) {
  const ac = new AbortController();
  // A record that went elsewhere must fail the test, not hang it.
  const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(READY_MS_MAX)]);
  const got: string[] = [];
  for await (const ev of felix.subscribe(stream, { from, shard, signal })) {
    got.push(decoder.decode(ev.data));
    if (got.length === n) break;
  }
  ac.abort();
  return got;
}

/** Publishes fresh values one at a time; a refused one is counted and never sent again. */
class Publisher {
  readonly acked: { body: string; offset: number }[] = [];
  readonly refusals = new Map<string, number>();
  private attempt = 0;

  constructor(
    readonly felix: Felix,
    private readonly stream: string,
  ) {}

  /** Publishes until `n` more are acknowledged, or fails after `deadlineMs`. */
  async more(n: number, deadlineMs: number): Promise<void> {
    const goal = this.acked.length + n;
    const deadline = Date.now() + deadlineMs;
    while (this.acked.length < goal) {
      if (Date.now() > deadline) throw new Error(`only ${this.acked.length} of ${goal} acked`);
      const body = `r${this.attempt++}`;
      try {
        const ack = await this.felix.publish(this.stream, body);
        this.acked.push({ body, offset: ack.offset as number });
      } catch (err) {
        // Refused or outcome unknown while the shard moves: try again with a new value.
        const code = String((err as { code?: unknown }).code ?? (err as Error).name);
        this.refusals.set(code, (this.refusals.get(code) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
      }
    }
  }
}

/** The records of shard 0 of `replicated` from the first acked offset through the last. */
async function readAcked(port: number, acked: { offset: number }[]) {
  const reader = await connectTo(port);
  const byOffset = new Map<number, string>();
  const ac = new AbortController();
  const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(READY_MS_MAX)]);
  const from = acked[0]?.offset as number;
  const last = acked[acked.length - 1]?.offset as number;
  try {
    for await (const ev of reader.subscribe('replicated', { from, shard: 0, signal })) {
      byOffset.set(ev.offset, decoder.decode(ev.data));
      if (ev.offset >= last) break;
    }
  } finally {
    ac.abort();
    await reader.close();
  }
  return byOffset;
}

describe('the compose cluster', () => {
  it('a_host_client_publishes_and_subscribes_on_every_broker_of_the_compose_cluster', async () => {
    const shards = 6;
    await createStream('every-broker', shards);
    const leaders = await leadersOf(files.operator, 'every-broker', shards);
    for (const [i, b] of BROKERS.entries()) {
      const shard = leaders.find((a) => a.leader === b.name)?.shard;
      expect(shard, `${b.name} leads a shard of every-broker`).toBeDefined();
      const felix = await connectTo(b.client, i === 1 ? 'tls' : 'quic');
      try {
        const body = `hello from the host to ${b.name}`;
        const ack = await publishWhenOpen(
          felix,
          'every-broker',
          body,
          keyFor(shard as number, shards),
        );
        const got = await readRecords(
          felix,
          'every-broker',
          shard as number,
          ack.offset as number,
          1,
        );
        expect(got).toEqual([body]);
      } finally {
        await felix.close();
      }
    }
  });

  it('acknowledged_records_survive_a_broker_container_restart', async () => {
    await createStream('survivor', 1);
    const [before] = await leadersOf(files.operator, 'survivor', 1);
    const broker = brokerByName(before?.leader as string);
    const sent = Array.from({ length: 20 }, (_, i) => `record ${i}`);
    const felix = await connectTo(broker.client);
    const first = await publishWhenOpen(felix, 'survivor', sent[0] as string);
    for (const body of sent.slice(1)) await felix.publish('survivor', body);
    await felix.close();

    docker('restart', '-t', '25', cluster.containerId(broker.name));
    await until(`${broker.name} to be ready again`, () => brokerReady(broker.http), READY_MS_MAX);
    const [after] = await leadersOf(files.operator, 'survivor', 1);
    const reader = await connectTo(brokerByName(after?.leader as string).client);
    try {
      const got = await until(
        'the records to be readable after the restart',
        () => readRecords(reader, 'survivor', 0, first.offset as number, sent.length),
        READY_MS_MAX,
      );
      expect(got).toEqual(sent);
    } finally {
      await reader.close();
    }
  });

  it(
    'killing_a_replicated_streams_leader_container_moves_publishes_to_another_broker_losing_no_ack',
    async () => {
      await api(files.admin, 'POST', `/v1/tenants/${TENANT}/namespaces/${NAMESPACE}/streams`, {
        stream: 'replicated',
        shards: 1,
        durable: true,
        replication_factor: 3,
        consistency: 'Quorum',
      });
      const [before] = await leadersOf(files.operator, 'replicated', 1);
      const leader = brokerByName(before?.leader as string);
      // The client's one seed is a broker that survives: it learns the others from it.
      const seed = BROKERS.find((b) => b.name !== leader.name) as (typeof BROKERS)[number];
      const pub = new Publisher(await connectTo(seed.client), 'replicated');
      const id = cluster.containerId(leader.name);
      try {
        await pub.more(ACKED_EACH_SIDE, READY_MS_MAX);
        // No restart by Docker: the shard must move, not wait for its leader to come back.
        docker('update', '--restart=no', id);
        const killedAt = Date.now();
        docker('kill', '-s', 'KILL', id);
        // Timed beside the publisher, for the log line; the publisher's deadline is the check.
        const moved = until(
          'the control plane to name another leader',
          async () => {
            const [a] = await leadersOf(files.operator, 'replicated', 1);
            return a?.leader === leader.name ? undefined : Date.now() - killedAt;
          },
          FAILOVER_MS_MAX,
        ).then(
          (ms) => `${ms} ms`,
          () => 'never',
        );
        await pub.more(1, FAILOVER_MS_MAX);
        const resumedMs = Date.now() - killedAt;
        console.log(
          `deploy: SIGKILL of the leader ${leader.name}: another leader named after ${await moved}, first publish acked after ${resumedMs} ms; refused meanwhile: ${JSON.stringify(Object.fromEntries(pub.refusals))}`,
        );
        await pub.more(ACKED_EACH_SIDE - 1, READY_MS_MAX);
        expect(docker('inspect', '-f', '{{.State.Running}}', id).trim(), 'still down').toBe(
          'false',
        );
        const [after] = await leadersOf(files.operator, 'replicated', 1);
        expect(after?.leader, 'another broker leads the stream').not.toBe(leader.name);
        expect(pub.acked).toHaveLength(2 * ACKED_EACH_SIDE);
        const byOffset = await readAcked(brokerByName(after?.leader as string).client, pub.acked);
        // Every acknowledged record is readable from the new leader, at its acked offset, once.
        for (const a of pub.acked)
          expect(byOffset.get(a.offset), `offset ${a.offset}`).toBe(a.body);
        const bodies = [...byOffset.values()];
        for (const a of pub.acked) expect(bodies.filter((b) => b === a.body)).toHaveLength(1);
      } finally {
        await pub.felix.close();
        // Back as compose runs it, for the tests after this one.
        docker('update', '--restart=unless-stopped', id);
        docker('start', id);
        await until(`${leader.name} ready again`, () => brokerReady(leader.http), READY_MS_MAX);
      }
    },
    FAILOVER_MS_MAX + 3 * READY_MS_MAX,
  );

  it('the_containers_run_as_a_non_root_user', () => {
    for (const service of ['control-plane', ...BROKERS.map((b) => b.name)]) {
      const id = cluster.containerId(service);
      expect(docker('inspect', '-f', '{{.Config.User}}', id).trim()).toBe(
        `${FELIX_UID}:${FELIX_UID}`,
      );
      // The running process itself, not only the configuration: PID 1's real and effective uid.
      const status = docker(
        'exec',
        id,
        'node',
        '-p',
        "require('fs').readFileSync('/proc/1/status','utf8')",
      );
      const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status);
      expect(uids?.slice(1, 3), service).toEqual([String(FELIX_UID), String(FELIX_UID)]);
    }
  });

  it('docker_stop_drains_a_broker_within_its_drain_bound', async () => {
    const broker = brokerByName('broker-3');
    await until('broker-3 to be ready', () => brokerReady(broker.http), READY_MS_MAX);
    const id = cluster.containerId(broker.name);
    const started = Date.now();
    docker('stop', '-t', '25', id);
    const elapsed = Date.now() - started;
    console.log(`deploy: docker stop of ${broker.name} took ${elapsed} ms`);
    expect(elapsed).toBeLessThan(DRAIN_TIMEOUT_MS);
    // Exit 0 is the broker's own drained exit; a SIGKILL after the grace period would be 137.
    expect(docker('inspect', '-f', '{{.State.ExitCode}}', id).trim()).toBe('0');
    const node = (await api(files.operator, 'GET', `/v1/nodes/${broker.name}`)).body as {
      node: { status: { lifecycle: string } };
    };
    expect(node.node.status.lifecycle).toBe('left');
  });
});
