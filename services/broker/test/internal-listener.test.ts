// Goal: brokers know each other by node id. The internal listener admits only peers with a
// certificate of the cluster CA whose DNS name is the node id their Hello claims, serves their
// requests once greeted, and a dialer reaches only the node it meant; the greeting tells a
// dialer whether the peer syncs before it answers, and a broker of an earlier build that knows
// only the plain Hello is still greeted; a broker told to join a cluster without the cluster
// certificate refuses to start unless told to run unauthenticated.
// Method: one test CA (b1, b2) and a foreign one; InternalListener and PeerConnection in
// process over both transports, and a real broker process for the join test.
import { tempDir, freePort, issueTestCert, makeTestCa } from '@felix/testing-harness';
import { startBroker } from '@felix/testing-e2e';
import { type TlsMaterial, dial, listen } from '@felix/transport';
import { ReplicaServer } from '@felix/replication';
import {
  INTERNAL_CAPABILITY,
  batchChecksum,
  encodeInternalMessage,
  InternalFrameDecoder,
  type InternalMessage,
  decodeInternalMessage,
} from '@felix/wire';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFrame } from '../src/cluster/internal-frames.js';
import { InternalListener } from '../src/cluster/internal-listener.js';
import { PeerConnection } from '../src/cluster/peer-dial.js';
import { LazyPeerLink } from '../src/cluster/peer-pool.js';
import { loadConfig } from '../src/config/load.js';
import { ConfigInvalidCombinationError, PeerIdentityError } from '../src/errors.js';

const log = pino({ level: 'silent' });
let dir: { path: string; cleanup: () => Promise<void> };
let other: { path: string; cleanup: () => Promise<void> };
let ca: string;
let b1: TlsMaterial;
let b2: TlsMaterial;
let foreign: TlsMaterial;
let paths: { cert: string; key: string; ca: string };

beforeAll(async () => {
  dir = await tempDir('felix-internal-');
  other = await tempDir('felix-internal-other-');
  const made = await makeTestCa(dir.path, 'DNS:b1,IP:127.0.0.1');
  ca = made.caPem;
  b1 = { certPem: made.certPem, keyPem: made.keyPem };
  paths = { cert: made.certPath, key: made.keyPath, ca: made.caPath };
  b2 = await issueTestCert(dir.path, 'b2', 'DNS:b2');
  const f = await makeTestCa(other.path, 'DNS:b2');
  foreign = { certPem: f.certPem, keyPem: f.keyPem };
});
afterAll(async () => {
  await dir.cleanup();
  await other.cleanup();
});

const shard = { tenantId: 't1', namespace: 'default', stream: 'orders', shard: 0, generation: 1 };
const records = encodeInternalMessage({
  kind: 'ReplicateRecords',
  correlationId: 7,
  shard,
  firstOffset: 0,
  checksum: batchChecksum([new Uint8Array([1])]),
  payloads: [new Uint8Array([1])],
});

function decode(bytes: Uint8Array) {
  return decodeInternalMessage(new InternalFrameDecoder().push(bytes)[0]!);
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`internal listener over ${transport}`, () => {
    let listener: InternalListener;
    let replicas: ReplicaServer;
    /** A listener speaking as b1 over the shared replica server, stating `capabilities`. */
    const listenAsB1 = (capabilities?: bigint) =>
      InternalListener.start({
        host: '127.0.0.1',
        port: 0,
        transport,
        selfId: 'b1',
        tls: b1,
        clusterCa: ca,
        serve: (frame) => replicas.handleFrame(frame),
        ...(capabilities === undefined ? {} : { capabilities }),
        log,
      });
    let data: { path: string; cleanup: () => Promise<void> };
    beforeAll(async () => {
      data = await tempDir('felix-internal-data-');
      replicas = new ReplicaServer({
        logOptions: (s) => ({
          root: data.path,
          shard: { tenant: s.tenantId, namespace: s.namespace, stream: s.stream, shard: s.shard },
          fsync: 'onCommit',
        }),
        assignment: () => ({ generation: 1 }),
      });
      listener = await listenAsB1();
    });
    afterAll(async () => {
      await listener.close();
      await replicas.close();
      await data.cleanup();
    });

    const dialAs = (selfId: string, tls: TlsMaterial, nodeId = 'b1') =>
      PeerConnection.dial({
        address: `127.0.0.1:${listener.port}`,
        transport,
        nodeId,
        selfId,
        tls,
        clusterCa: ca,
        timeoutMs: 3_000,
      });

    it('a_peer_with_the_cluster_certificate_is_greeted_and_its_requests_served', async () => {
      const peer = await dialAs('b2', b2);
      try {
        expect(decode(await peer.request(records, 3_000))).toMatchObject({
          kind: 'ReplicateOk',
          correlationId: 7,
          durableOffset: 1,
        });
      } finally {
        await peer.close();
      }
    });

    it('a_peer_claiming_another_node_than_its_certificate_names_is_refused', async () => {
      await expect(dialAs('b3', b2)).rejects.toBeInstanceOf(PeerIdentityError);
    });

    it('a_hello_learns_whether_the_peer_syncs_before_it_answers_and_a_plain_hello_gets_a_plain_answer', async () => {
      const syncing = await listenAsB1(INTERNAL_CAPABILITY.SYNCS_BEFORE_ANSWER);
      const peers: PeerConnection[] = [];
      try {
        peers.push(
          await PeerConnection.dial({
            address: `127.0.0.1:${syncing.port}`,
            transport,
            nodeId: 'b1',
            selfId: 'b2',
            tls: b2,
            clusterCa: ca,
            timeoutMs: 3_000,
          }),
        );
        peers.push(await dialAs('b2', b2));
        // The suite's listener states no bits: its copies may answer once written.
        expect(peers.map((p) => p.answersSynced())).toEqual([true, false]);
        // An older broker's plain Hello is answered as it always was.
        const conn = await dial(`${transport}://127.0.0.1:${syncing.port}`, {
          ca,
          serverName: 'b1',
          clientTls: b2,
        });
        try {
          const stream = await conn.openBidi();
          await stream.write(
            encodeInternalMessage({ kind: 'Hello', correlationId: 3, nodeId: 'b2' }),
          );
          await stream.end();
          const answer = await readFrame(stream);
          expect(decodeInternalMessage(answer!)).toEqual({
            kind: 'HelloOk',
            correlationId: 3,
            nodeId: 'b1',
          });
        } finally {
          await conn.close();
        }
      } finally {
        for (const p of peers) await p.close();
        await syncing.close();
      }
    });

    /**
     * A stand-in peer b1 on this transport: each connection's first frame is its greeting,
     * noted in `greetings`, and `answer` says what it gets: a message written back, `close`
     * (the connection closed unanswered, as an earlier build does to a HelloCapable) or
     * `silent` (never answered). Nothing after the greeting is answered.
     */
    async function fakePeer(answer: (m: InternalMessage) => InternalMessage | 'close' | 'silent') {
      const listener = await listen({
        transport,
        host: '127.0.0.1',
        port: 0,
        tls: b1,
        clientCa: ca,
      });
      const greetings: string[] = [];
      void (async () => {
        for await (const conn of listener.connections()) {
          void (async () => {
            const first = await conn.incoming()[Symbol.asyncIterator]().next();
            if (first.done) return;
            const m = decodeInternalMessage((await readFrame(first.value))!);
            greetings.push(m.kind);
            const reply = answer(m);
            if (reply === 'silent') return;
            if (reply === 'close') return conn.close({ code: 1, reason: `refused ${m.kind}` });
            await first.value.write(encodeInternalMessage(reply));
            await first.value.end();
            // A connection the dialer dropped or abandoned: the greetings seen are the result.
          })().catch(() => undefined);
        }
        // The listener closed at the end of the test.
      })().catch(() => undefined);
      return { port: listener.port, greetings, close: () => listener.close() };
    }

    /** The dial of b1 (as b2) at `port`. */
    const dialB1At = (port: number, timeoutMs: number, capabilities?: bigint) =>
      PeerConnection.dial({
        address: `127.0.0.1:${port}`,
        transport,
        nodeId: 'b1',
        selfId: 'b2',
        tls: b2,
        clusterCa: ca,
        timeoutMs,
        ...(capabilities === undefined ? {} : { capabilities }),
      });

    /** b1's answer to a greeting: HelloOk to a plain Hello, else HelloCapableOk with `bits`. */
    const greetingAnswer = (m: InternalMessage, bits = 0n): InternalMessage => {
      const self = { correlationId: m.correlationId, nodeId: 'b1' };
      return m.kind === 'Hello'
        ? { kind: 'HelloOk', ...self }
        : { kind: 'HelloCapableOk', ...self, capabilities: bits };
    };

    it('a_dialer_greets_an_earlier_broker_that_knows_only_the_plain_hello', async () => {
      // An earlier build's listener: it closes on any greeting but a plain Hello.
      const earlier = await fakePeer((m) => (m.kind === 'Hello' ? greetingAnswer(m) : 'close'));
      try {
        const peer = await dialB1At(earlier.port, 3_000, INTERNAL_CAPABILITY.SYNCS_BEFORE_ANSWER);
        // Greeted the second time, with nothing stated of its syncs.
        expect(earlier.greetings).toEqual(['HelloCapable', 'Hello']);
        expect(peer.answersSynced()).toBeUndefined();
        await peer.close();
      } finally {
        await earlier.close();
      }
    });

    it('a_capable_hello_that_times_out_is_not_retried_as_a_plain_hello', async () => {
      // A peer that takes the greeting and never answers (a stalled broker of this build): a
      // plain Hello on a second connection would leave its fsync mode unstated.
      const stalled = await fakePeer(() => 'silent');
      try {
        await expect(dialB1At(stalled.port, 300)).rejects.toBeInstanceOf(PeerIdentityError);
        expect(stalled.greetings).toEqual(['HelloCapable']);
      } finally {
        await stalled.close();
      }
    });

    it('a_link_keeps_what_a_peer_stated_when_a_later_connection_is_greeted_plainly', async () => {
      // The peer first answers the capable Hello stating no bits (its copies answer once
      // written), then acts as an earlier build; it never answers a request.
      let earlierBuild = false;
      const peerAt = await fakePeer((m) =>
        earlierBuild && m.kind !== 'Hello' ? 'close' : greetingAnswer(m),
      );
      const link = new LazyPeerLink('b1', {
        selfId: 'b2',
        transport,
        cluster: { tls: b2, ca },
        clientTls: b2,
        address: () => `127.0.0.1:${peerAt.port}`,
        log,
      });
      try {
        expect(link.answersSynced()).toBeUndefined();
        await expect(link.request(records, 200)).rejects.toThrow();
        expect(link.answersSynced()).toBe(false);
        // The failed request dropped the connection; the next one is greeted plainly.
        earlierBuild = true;
        await expect(link.request(records, 200)).rejects.toThrow();
        expect(link.answersSynced()).toBe(false);
      } finally {
        await link.close();
        await peerAt.close();
      }
    });

    it('a_dialer_reaches_only_the_node_it_meant', async () => {
      // The listener's certificate names b1, not b9: the handshake fails.
      await expect(dialAs('b2', b2, 'b9')).rejects.toThrow();
    });
  });
}

describe('joining a cluster', () => {
  it('a_broker_configured_for_a_cluster_without_the_certificate_refuses_to_start', () => {
    const base = { FELIX_INTERNAL_BIND: '127.0.0.1:7001' };
    expect(() => loadConfig(base)).toThrow(ConfigInvalidCombinationError);
    expect(() => loadConfig({ ...base, FELIX_INTERNAL_TLS_CERT: paths.cert })).toThrow(/all three/);
    const unauthenticated = loadConfig({ ...base, FELIX_INTERNAL_ALLOW_UNAUTHENTICATED: 'true' });
    expect(unauthenticated.cluster.internal_allow_unauthenticated).toBe(true);
  });

  it('a_broker_process_refuses_peers_with_another_cas_certificate_or_none', async () => {
    const brokerDir = await tempDir('felix-internal-broker-');
    const port = await freePort();
    const broker = await startBroker({
      yaml: 'streams:\n  - { tenant: t1, name: orders }\n',
      dir: brokerDir.path,
      env: {
        FELIX_NODE_ID: 'b1',
        FELIX_INTERNAL_BIND: `127.0.0.1:${port}`,
        FELIX_INTERNAL_TLS_CERT: paths.cert,
        FELIX_INTERNAL_TLS_KEY: paths.key,
        FELIX_INTERNAL_TLS_CA: paths.ca,
      },
    });
    const dialAs = (tls: TlsMaterial | null) =>
      PeerConnection.dial({
        address: `127.0.0.1:${port}`,
        transport: 'tls',
        nodeId: 'b1',
        selfId: 'b2',
        tls: tls ?? b2,
        clusterCa: tls === null ? null : ca,
        timeoutMs: 3_000,
      });
    try {
      // A certificate of another CA, and none at all (an unauthenticated dialer), are refused.
      await expect(dialAs(foreign)).rejects.toThrow();
      await expect(dialAs(null)).rejects.toThrow();
      const member = await dialAs(b2);
      await member.close();
    } finally {
      await broker.stop();
      await brokerDir.cleanup();
    }
  });
});
