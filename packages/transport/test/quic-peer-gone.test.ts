// Goal: a QUIC connection whose peer process died (SIGKILL: no CONNECTION_CLOSE, no more
// packets) is closed as soon as the peer's host says nothing listens on its UDP port any more,
// as a TCP connection is by the RST a killed process's kernel sends, instead of when the idle
// timeout runs out; a peer that is silent but alive (stopped) is probed and kept; a healthy
// connection sends no probe at all.
// Method: a child process listens on QUIC; the test dials it with a 30 s idle timeout and
// keep-alives every second, opens a stream, then SIGKILLs the child and waits on the
// connection's `closed` with a deadline far below the idle timeout. The stopped-peer case
// SIGSTOPs the child until the connection has probed it three times, then SIGCONTs it and uses
// the connection. The healthy case counts a connection's packets and its probes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNode, waitFor, withDeadline } from '@felix/testing-harness';
import { describe, expect, it } from 'vitest';
import { CLOSE_CODE_PEER_LOST } from '../src/codes.js';
import { ConnectionClosedError } from '../src/errors.js';
import { dial } from '../src/index.js';
import { connectPair, enc, settle } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..');
const IDLE_MS = 30_000;

describe('a QUIC peer that is gone', () => {
  it('a_quic_connection_whose_peer_process_died_closes_at_once_naming_the_refusal', async () => {
    const peer = await childListener();
    try {
      const conn = await dialChild(peer, 1_000);
      try {
        const stream = await conn.openBidi();
        await stream.write(enc.encode('hello'));
        const pendingRead = settle(stream[Symbol.asyncIterator]().next());
        await peer.child.kill();
        // Well inside the idle timeout: only the refusal can close it this soon.
        const info = await withDeadline(conn.closed, IDLE_MS / 3, 'the dead peer noticed');
        expect(info.code).toBe(CLOSE_CODE_PEER_LOST);
        expect(info.reason).toBe(
          `peer gone: nothing listens on UDP port ${peer.port} (connection refused)`,
        );
        expect(info.error).toBeInstanceOf(ConnectionClosedError);
        const r = await pendingRead;
        expect(r.ok).toBe(false);
        expect((r as { error: unknown }).error).toBeInstanceOf(ConnectionClosedError);
      } finally {
        await conn.close().catch(() => {}); // already closed by the refusal
      }
    } finally {
      await peer.stop();
    }
  });

  it('a_quic_peer_that_is_stopped_but_still_bound_is_probed_and_kept', async () => {
    // A SIGSTOPped peer answers nothing, but its port is still bound: its host refuses no probe,
    // so the connection waits for the peer (its idle timeout bounds that) and goes on after.
    const peer = await childListener();
    try {
      const conn = await dialChild(peer, 300);
      try {
        const probes = () => conn.stats().peerProbesSent ?? 0;
        peer.child.proc.kill('SIGSTOP');
        await waitFor(() => probes() >= 3, 'three probes of the stopped peer', 20_000);
        peer.child.proc.kill('SIGCONT');
        const heard = conn.stats().packetsReceived;
        await waitFor(() => conn.stats().packetsReceived > heard, 'the peer heard again', 10_000);
        const stream = await conn.openBidi(); // throws if the connection had been closed
        await stream.write(enc.encode('still here'));
      } finally {
        await conn.close().catch(() => {}); // the test ends it either way
      }
    } finally {
      peer.child.proc.kill('SIGCONT');
      await peer.stop();
    }
  });

  it('a_quic_connection_whose_keep_alives_are_answered_sends_no_probes', async () => {
    // A healthy connection, here a quiet one, never probes: only an unanswered keep-alive does.
    // The client's keep-alives 700 ms apart (a probe after a fixed half second of silence would
    // go out); the server's far apart, so only the answers to the client's keep the watch quiet.
    const p = await connectPair(
      'quic',
      { idleTimeoutMs: IDLE_MS, keepAliveIntervalMs: 20_000 },
      { idleTimeoutMs: IDLE_MS, keepAliveIntervalMs: 700 },
    );
    try {
      const first = p.client.stats().packetsReceived;
      // Several keep-alive round trips (each ACK or keep-alive of the peer's is a packet).
      await waitFor(() => p.client.stats().packetsReceived >= first + 6, 'six packets', 20_000);
      expect(p.client.stats().peerProbesSent).toBe(0);
    } finally {
      await p.cleanup();
    }
  });
});

/** A QUIC listener in a child process (fixtures/listen-and-hold.ts), with its address. */
async function childListener() {
  const dir = await mkdtemp(join(tmpdir(), 'felix-peer-gone-'));
  const child = spawnNode(['--import', 'tsx', join(here, 'fixtures', 'listen-and-hold.ts'), dir], {
    cwd: repoRoot,
  });
  await child.waitForOutput(/listening \d+ \S+/, 'child listening', 20_000);
  const [, port, fingerprint] = /listening (\d+) (\S+)/.exec(child.stdout())!;
  return {
    child,
    port: port!,
    fingerprint: fingerprint!,
    async stop() {
      await child.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function dialChild(peer: { port: string; fingerprint: string }, keepAliveIntervalMs: number) {
  return dial(`quic://127.0.0.1:${peer.port}`, {
    fingerprint: peer.fingerprint,
    idleTimeoutMs: IDLE_MS,
    keepAliveIntervalMs,
  });
}
