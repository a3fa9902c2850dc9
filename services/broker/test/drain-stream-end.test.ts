// Goal: a broker stopped with SIGTERM while a client pipelines acked publishes answers every
// publish it applied, then ends the request stream (a clean half-close, not the connection's
// loss), and applies nothing it read after: the end tells the client that every publish left
// unanswered was not applied (services/broker/src/session/stream-finish.ts).
// Method: one durable felix-broker process per transport; a raw authenticated stream writes
// publishes (request id = payload) in a loop without waiting for answers while another loop
// reads the answers; SIGTERM after 200 answers. The reader must see the stream end cleanly;
// after a restart in the same data dir the log holds exactly the answered publishes: each one
// read back, and the next publish lands at the offset after them.
import { type BrokerProcess, rawAuthed, startBroker } from '@felix/testing-e2e';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { connect } from '@felix/client';
import { dial } from '@felix/transport';
import { FrameDecoder, decodeMessage, encodeMessage } from '@felix/wire';
import { describe, expect, it } from 'vitest';

const YAML = 'streams:\n  - { tenant: t1, name: log, durable: true }\n';
/** Frames per write: enough that requests are still unread when the stop begins. */
const FRAMES_PER_WRITE = 20;
const ENDS_WITHIN_MS = 20_000;

function publishFrame(id: number): Uint8Array {
  return encodeMessage({
    type: 'publish_batch',
    tenant_id: 't1',
    namespace: 'default',
    stream: 'log',
    payloads: [new TextEncoder().encode(String(id))],
    request_id: id,
    ack: 'per_batch',
  });
}

describe('a broker stopped under pipelined publishes', () => {
  it('a_stopping_broker_answers_what_it_applied_then_ends_the_request_stream_and_applies_nothing_after', async () => {
    for (const transport of ['tls', 'quic'] as const) {
      const dir = await tempDir();
      const spec = { yaml: YAML, dir: dir.path, durable: true };
      let broker: BrokerProcess = await startBroker(spec);
      try {
        const conn = await dial(broker.url(transport), {
          fingerprint: broker.fingerprint,
          dialTimeoutMs: 5_000,
        });
        const raw = await rawAuthed(conn, 0x0800, undefined, 0);
        const answered: number[] = [];
        let writing = true;
        const writer = (async () => {
          for (let id = 1; writing; id += FRAMES_PER_WRITE) {
            const frames = Array.from({ length: FRAMES_PER_WRITE }, (_, i) => publishFrame(id + i));
            await raw.stream.write(Buffer.concat(frames)); // fails once the connection is gone
          }
        })().catch(() => undefined); // its last write fails with the closed connection: expected
        const reader = (async (): Promise<'ended'> => {
          for (;;) {
            const msg = (await raw.next()) as { type: string; request_id?: number } | null;
            if (msg === null) return 'ended';
            if (msg.type !== 'publish_ok') throw new Error(`answered ${JSON.stringify(msg)}`);
            answered.push(msg.request_id!);
          }
        })();
        await waitFor(() => answered.length >= 200, '200 publishes answered');
        const stopping = broker.stop(); // SIGTERM
        // The stream's end arrives as an end, not as the connection's loss.
        expect(await withDeadline(reader, ENDS_WITHIN_MS, 'the request stream to end')).toBe(
          'ended',
        );
        writing = false;
        await stopping;
        await writer;
        await conn.close().catch(() => undefined); // the broker closed it already
        broker = await startBroker({ ...spec, port: broker.port, httpPort: broker.httpPort });
        const felix = await connect({
          servers: [broker.url(transport)],
          tenant: 't1',
          tls: { fingerprint: broker.fingerprint },
        });
        try {
          // Nothing beyond the answered publishes was applied: the next lands right after them.
          expect((await felix.publish('log', 'probe')).offset).toBe(answered.length);
          const logged = new Set<string>();
          const sub = felix.subscribe('log', { from: 'earliest' });
          const reading = (async () => {
            for await (const m of sub) logged.add(new TextDecoder().decode(m.data));
          })();
          await waitFor(() => logged.size > answered.length, 'the log read back');
          sub.close();
          await reading;
          expect(answered.filter((id) => !logged.has(String(id)))).toEqual([]);
        } finally {
          await felix.close();
        }
      } finally {
        await broker.stop();
        await dir.cleanup();
      }
    }
  }, 120_000);

  it('a_stream_opened_while_the_broker_stops_is_refused_draining_not_left_unanswered', async () => {
    // The stop waits (broker.drain_peer_close_ms, here far longer than this test takes) for the
    // client to close the streams it ended; this client never does, so the connection stays up
    // while a new stream asks in.
    const dir = await tempDir();
    const broker = await startBroker({
      yaml: YAML,
      dir: dir.path,
      durable: true,
      env: { FELIX_BROKER_DRAIN_PEER_CLOSE_MS: '30000', FELIX_BROKER_DRAIN_TIMEOUT_MS: '60000' },
    });
    try {
      const conn = await dial(broker.url('tls'), {
        fingerprint: broker.fingerprint,
        dialTimeoutMs: 5_000,
      });
      const first = await rawAuthed(conn, 0x0800, undefined, 0);
      const stopping = broker.stop(); // SIGTERM
      expect(await withDeadline(first.next(), ENDS_WITHIN_MS, 'the stop to end the stream')).toBe(
        null,
      );
      const late = await conn.openBidi();
      await late.write(
        encodeMessage({
          type: 'auth',
          tenant_id: 't1',
          token: '',
          client_flags: 0,
          client_features: 0x0800,
        }),
      );
      const decoder = new FrameDecoder();
      const answer = await withDeadline(
        (async () => {
          for await (const chunk of late) {
            const frames = decoder.push(chunk);
            if (frames.length > 0) return decodeMessage(frames[0]!.payload);
          }
          return null;
        })(),
        ENDS_WITHIN_MS,
        "the late stream's auth answer",
      );
      expect(answer).toMatchObject({ type: 'error', code: 'draining' });
      // Closing ends the broker's wait for this client: its stop then finishes.
      await conn.close();
      await stopping;
    } finally {
      await broker.stop();
      await dir.cleanup();
    }
  });
});
