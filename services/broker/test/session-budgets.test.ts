// Goal: what a client's requests may pin in the broker is bounded in bytes, over both transports:
// one connection leaving a large frame unfinished on many streams holds at most its partial-frame
// budget (the streams past it are refused with `limit_exceeded`), a stream that has not
// authenticated in time is ended even after another stream of its connection authenticated, and
// a read that would take the broker past its in-flight budget is refused with `overloaded` and
// counted.
// Method: one felix-broker process with small budgets (1 MiB frames, 4 MiB per connection, 6 MiB
// in flight), raw transport streams writing frames the client never sends (a frame 64 bytes
// short of whole), the broker's /metrics (`felix_broker_inflight_request_bytes` is what the
// ledger counts) read between steps; each step waits on a condition with a deadline.
import {
  type BrokerProcess,
  type RawSession,
  brokerMetric as metric,
  rawAuthed,
  startBroker,
} from '@felix/testing-e2e';
import { tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { type Connection, dial } from '@felix/transport';
import { encodeFrame, encodeMessage } from '@felix/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: log }
`;

const MIB = 1024 * 1024;
const FRAME_BYTES = MIB;
const CONNECTION_BYTES = 4 * MIB;
const INFLIGHT_BYTES = 6 * MIB;
const AUTH_TIMEOUT_MS = 1500;
/** Payload bytes each unfinished frame delivers: its header and all but its last 64 bytes. */
const HELD_BYTES = FRAME_BYTES - 64;
/** Frames whole within a connection's budget. */
const FIT = Math.floor(CONNECTION_BYTES / HELD_BYTES);
/** Long enough that no answer in these tests meets it on a loaded machine. */
const ANSWER_WITHIN_MS = 20_000;

const INFLIGHT = /felix_broker_inflight_request_bytes (\d+)/;
const OVER_CONNECTION =
  /felix_broker_bad_input_total\{reason="connection_partial_frame_bytes"\} (\d+)/;
const OVERLOADED = /felix_broker_requests_overloaded_total (\d+)/;
const STREAM_AUTH = /felix_broker_bad_input_total\{reason="stream_auth_timeout"\} (\d+)/;

/** A frame's header and its body but for the last 64 bytes, written without waiting: the broker
 *  may stop reading the stream (a refusal), and the write would then never be accepted. */
function writeUnfinished(raw: RawSession): void {
  const frame = encodeFrame(0, new Uint8Array(FRAME_BYTES));
  // A refused stream's write may fail or never finish: what the broker answers is the check.
  raw.stream.write(frame.subarray(0, 12 + HELD_BYTES)).catch(() => undefined);
}

function publish(requestId: number, bytes: number): Uint8Array {
  return encodeMessage({
    type: 'publish_batch',
    tenant_id: 't1',
    namespace: 'default',
    stream: 'log',
    payloads: [new Uint8Array(bytes).fill(0x61)],
    request_id: requestId,
    ack: 'per_batch',
  });
}

/** Opens an authenticated stream and leaves a frame unfinished on it; waits until the broker
 *  holds it (`held` bytes in flight in all). */
async function holdOne(broker: BrokerProcess, conn: Connection, held: number): Promise<void> {
  const raw = await rawAuthed(conn, 0x0800);
  writeUnfinished(raw);
  await waitFor(async () => (await metric(broker, INFLIGHT)) === held, `${held} bytes held`);
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`request byte budgets over ${transport}`, () => {
    let broker: BrokerProcess;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      broker = await startBroker({
        yaml: YAML,
        dir: dir.path,
        env: {
          FELIX_BROKER_AUTH_TIMEOUT_MS: String(AUTH_TIMEOUT_MS),
          FELIX_BROKER_PARTIAL_FRAME_DEADLINE_MS: '600000',
          FELIX_BROKER_MAX_FRAME_BYTES: String(FRAME_BYTES),
          FELIX_BROKER_CONNECTION_PARTIAL_FRAME_BYTES: String(CONNECTION_BYTES),
          FELIX_BROKER_CONNECTION_ANSWER_BYTES: String(CONNECTION_BYTES),
          FELIX_BROKER_INFLIGHT_REQUEST_BYTES: String(INFLIGHT_BYTES),
        },
      });
    });
    afterAll(async () => {
      await broker?.stop();
      await cleanup?.();
    });
    const dialBroker = () => dial(broker.url(transport), { fingerprint: broker.fingerprint });
    const nothingHeld = () =>
      waitFor(async () => (await metric(broker, INFLIGHT)) === 0, 'nothing held');

    it('partial_frames_on_many_streams_cannot_exceed_the_connection_budget', async () => {
      await nothingHeld();
      const before = await metric(broker, OVER_CONNECTION);
      const conn = await dialBroker();
      for (let i = 1; i <= FIT; i++) await holdOne(broker, conn, i * HELD_BYTES);
      const excess = 4;
      for (let i = 0; i < excess; i++) {
        const raw = await rawAuthed(conn, 0x0800);
        writeUnfinished(raw);
        expect(await withDeadline(raw.next(), ANSWER_WITHIN_MS, 'the refusal')).toMatchObject({
          type: 'error',
          code: 'limit_exceeded',
        });
        expect(await withDeadline(raw.next(), ANSWER_WITHIN_MS, 'the stream to end')).toBeNull();
        // What the refused stream held is let go: the connection holds its budget's worth.
        const held = await metric(broker, INFLIGHT);
        expect(held).toBeLessThanOrEqual(CONNECTION_BYTES);
        expect(held).toBe(FIT * HELD_BYTES);
      }
      expect(await metric(broker, OVER_CONNECTION)).toBe(before + excess);
      await conn.close();
      await nothingHeld(); // a closed connection's partial frames are let go with it
    });

    it('a_stream_that_does_not_authenticate_in_time_is_ended_though_another_stream_did', async () => {
      const before = await metric(broker, STREAM_AUTH);
      const conn = await dialBroker();
      const authed = await rawAuthed(conn, 0x0800);
      // A stream that sends part of its `auth` and never the rest.
      const stream = await conn.openBidi();
      const auth = encodeMessage({ type: 'auth', tenant_id: 't1', token: '', client_flags: 0 });
      await stream.write(auth.subarray(0, auth.length - 1));
      const chunks: Uint8Array[] = [];
      await withDeadline(
        (async () => {
          for await (const chunk of stream) chunks.push(chunk);
        })(),
        AUTH_TIMEOUT_MS * 10,
        'the unauthenticated stream to be ended',
      );
      const answer = new TextDecoder().decode(Buffer.concat(chunks));
      expect(answer).toContain('must authenticate within');
      await waitFor(async () => (await metric(broker, STREAM_AUTH)) === before + 1, 'the count');
      // The connection and its authenticated stream carry on.
      await authed.stream.write(publish(1, 16));
      expect(await withDeadline(authed.next(), ANSWER_WITHIN_MS, 'the ack')).toMatchObject({
        type: 'publish_ok',
        request_id: 1,
      });
      await conn.close();
    });

    it('a_read_past_the_broker_in_flight_budget_is_refused_as_overloaded', async () => {
      await nothingHeld();
      const before = await metric(broker, OVERLOADED);
      const a = await dialBroker();
      const b = await dialBroker();
      const late = await rawAuthed(b, 0x0800); // authenticated before the broker fills up
      let held = 0;
      for (const [conn, n] of [
        [a, FIT],
        [b, INFLIGHT_BYTES / MIB - FIT],
      ] as const) {
        for (let i = 0; i < n; i++) await holdOne(broker, conn, (held += HELD_BYTES));
      }
      // Within each connection's budget, but this read would take the broker past its own.
      await late.stream.write(publish(2, 4096));
      expect(await withDeadline(late.next(), ANSWER_WITHIN_MS, 'the refusal')).toMatchObject({
        type: 'error',
        code: 'overloaded',
        retry: 'retry_after',
      });
      expect(await metric(broker, OVERLOADED)).toBe(before + 1);
      expect(await metric(broker, INFLIGHT)).toBeLessThanOrEqual(INFLIGHT_BYTES);
      // Once a connection lets go, requests are served again.
      await a.close();
      const again = await rawAuthed(b, 0x0800);
      await again.stream.write(publish(3, 4096));
      expect(await withDeadline(again.next(), ANSWER_WITHIN_MS, 'the ack')).toMatchObject({
        type: 'publish_ok',
        request_id: 3,
      });
      await b.close();
    });
  });
}
