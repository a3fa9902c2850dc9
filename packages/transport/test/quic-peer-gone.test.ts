// Goal: a QUIC connection whose peer process died (SIGKILL: no CONNECTION_CLOSE, no more
// packets) is closed as soon as the peer's host says nothing listens on its UDP port any more,
// as a TCP connection is by the RST a killed process's kernel sends, instead of when the idle
// timeout runs out; and a live but quiet peer is never closed for its quiet.
// Method: a child process listens on QUIC; the test dials it with a 30 s idle timeout and
// keep-alives every second, opens a stream, then SIGKILLs the child and waits on the
// connection's `closed` with a deadline far below the idle timeout. The quiet-peer case holds a
// connection to a live listener with keep-alives far apart while probes go out.
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
    const dir = await mkdtemp(join(tmpdir(), 'felix-peer-gone-'));
    const child = spawnNode(
      ['--import', 'tsx', join(here, 'fixtures', 'listen-and-hold.ts'), dir],
      { cwd: repoRoot },
    );
    try {
      await child.waitForOutput(/listening \d+ \S+/, 'child listening', 20_000);
      const [, port, fingerprint] = /listening (\d+) (\S+)/.exec(child.stdout())!;
      const conn = await dial(`quic://127.0.0.1:${port}`, {
        fingerprint: fingerprint!,
        idleTimeoutMs: IDLE_MS,
        keepAliveIntervalMs: 1_000,
      });
      try {
        const stream = await conn.openBidi();
        await stream.write(enc.encode('hello'));
        const pendingRead = settle(stream[Symbol.asyncIterator]().next());
        await child.kill();
        // Well inside the idle timeout: only the refusal can close it this soon.
        const info = await withDeadline(conn.closed, IDLE_MS / 3, 'the dead peer noticed');
        expect(info.code).toBe(CLOSE_CODE_PEER_LOST);
        expect(info.reason).toBe(
          `peer gone: nothing listens on UDP port ${port} (connection refused)`,
        );
        expect(info.error).toBeInstanceOf(ConnectionClosedError);
        const r = await pendingRead;
        expect(r.ok).toBe(false);
        expect((r as { error: unknown }).error).toBeInstanceOf(ConnectionClosedError);
      } finally {
        await conn.close().catch(() => {}); // already closed by the refusal
      }
    } finally {
      await child.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a_quiet_but_live_quic_peer_is_not_closed_by_the_refusal_probes', async () => {
    // Keep-alives every 2 s leave gaps of silence that the probes (at 0.5 s of silence, then
    // 1 s) fill: three probes span at least two gaps.
    const t = { idleTimeoutMs: IDLE_MS, keepAliveIntervalMs: 2_000 };
    const p = await connectPair('quic', t, t);
    try {
      let closed = false;
      void p.client.closed.then(() => {
        closed = true;
      });
      const probes = () => p.client.stats().peerProbesSent ?? 0;
      await waitFor(() => closed || probes() >= 3, 'three probes of the quiet peer', 20_000);
      expect(closed).toBe(false);
      const s = await p.client.openBidi();
      await s.write(enc.encode('still here'));
      expect(closed).toBe(false);
    } finally {
      await p.cleanup();
    }
  });
});
