// Goal: the broker's session edge meets bad or raw input as specified, over both transports: a
// frame with an unknown flag and an oversized frame before auth are refused and counted, a
// connection that never authenticates is closed, a JSON publish is acknowledged with its offset,
// a large publish written in the same read as `auth` is read under the post-auth bound, a frame
// left partial past its deadline ends its stream, and no byte sequence a client can send crashes
// the broker.
// Method: real felix-broker processes per transport (@felix/testing-e2e starts them by path;
// the fuzz gets its own), raw transport streams writing frames the client never sends,
// fast-check byte strings. The client only reads back what a raw publish appended.
import { type FelixClient, connect } from '@felix/client';
import {
  type BrokerProcess,
  brokerMetric as metric,
  durableBrokerForSuite,
  rawAuthed,
  startBroker,
} from '@felix/testing-e2e';
import { take, tempDir, waitFor, withDeadline } from '@felix/testing-harness';
import { dial } from '@felix/transport';
import {
  FEATURE_ERROR_CODES,
  FEATURE_UNSUPPORTED,
  FrameDecoder,
  decodeMessage,
  encodeFrame,
  encodeMessage,
} from '@felix/wire';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const YAML = `
streams:
  - { tenant: t1, name: log, durable: true, fsync: periodic }
`;

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Short, so the deadline test is quick; long enough that no healthy frame in a test meets it. */
const PARTIAL_DEADLINE_MS = 1000;

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function client(broker: BrokerProcess, transport: 'tls' | 'quic'): Promise<FelixClient> {
  return connect({
    servers: [broker.url(transport)],
    tenant: 't1',
    tls: { fingerprint: broker.fingerprint },
  });
}

for (const transport of ['tls', 'quic'] as const) {
  describe(`session frames over ${transport}`, () => {
    let shared: BrokerProcess;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const dir = await tempDir();
      cleanup = dir.cleanup;
      shared = await startBroker({
        yaml: YAML,
        dir: dir.path,
        durable: true,
        env: {
          FELIX_BROKER_AUTH_TIMEOUT_MS: '1500',
          FELIX_BROKER_PARTIAL_FRAME_DEADLINE_MS: String(PARTIAL_DEADLINE_MS),
        },
      });
    });
    afterAll(async () => {
      await shared?.stop();
      await cleanup?.();
    });

    it('a_frame_with_an_unknown_flag_is_refused', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      const before = await metric(
        shared,
        /felix_broker_bad_input_total\{reason="invalid_flags"\} (\d+)/,
      );
      const bad = encodeFrame(0, new Uint8Array(4));
      new DataView(bad.buffer, bad.byteOffset).setUint16(6, 0x8003); // 0x8000 with another bit: reserved, no layout (0x8001 and 0x8002 are the binary cache and group words)
      await raw.stream.write(bad);
      expect(await raw.next()).toMatchObject({ type: 'error', code: 'invalid_request' });
      expect(await raw.next()).toBeNull(); // the broker ended the stream
      expect(
        await metric(shared, /felix_broker_bad_input_total\{reason="invalid_flags"\} (\d+)/),
      ).toBe(before + 1);
      // The connection and the broker carry on.
      const again = await rawAuthed(conn, 0x0800);
      again.stream.reset(0);
      await conn.close();
    });

    it('an_oversized_frame_before_auth_is_refused', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const stream = await conn.openBidi();
      const header = encodeFrame(0, new Uint8Array(0));
      new DataView(header.buffer, header.byteOffset).setUint32(8, 64 * 1024 + 1);
      await stream.write(header); // the header alone: no body is ever sent
      const decoder = new FrameDecoder();
      const frames: unknown[] = [];
      for await (const chunk of stream)
        for (const f of decoder.push(chunk)) frames.push(decodeMessage(f.payload));
      expect(frames).toEqual([expect.objectContaining({ type: 'error' })]);
      expect(
        await metric(shared, /felix_broker_bad_input_total\{reason="frame_too_large"\} (\d+)/),
      ).toBeGreaterThan(0);
      await conn.close();
    });

    it('an_auth_with_an_oversized_token_or_empty_tenant_is_refused_with_its_code_naming_the_field', async () => {
      // These were answered `{"type":"error","message":"bad tenant or token"}`: no code although
      // the auth offered FEATURE_ERROR_CODES (as every other auth refusal carries), and no word
      // of which field or bound.
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const cases = [
        { tenant_id: 't1', token: 'a'.repeat(60_000), field: /token is 60000 characters/ },
        { tenant_id: '', token: 'x', field: /tenant_id is empty/ },
      ];
      for (const c of cases) {
        const stream = await conn.openBidi();
        await stream.write(
          encodeMessage({
            type: 'auth',
            tenant_id: c.tenant_id,
            token: c.token,
            client_flags: 0x1fff,
            client_features: FEATURE_ERROR_CODES,
          }),
        );
        const decoder = new FrameDecoder();
        const frames: unknown[] = [];
        for await (const chunk of stream)
          for (const f of decoder.push(chunk)) frames.push(decodeMessage(f.payload));
        expect(frames).toEqual([
          expect.objectContaining({
            type: 'error',
            code: 'unauthenticated',
            message: expect.stringMatching(c.field),
          }),
        ]);
      }
      await conn.close();
    });

    it('a_connection_that_never_authenticates_is_closed', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const info = await conn.closed;
      expect(info.code).toBe(1);
      expect(info.reason).toBe('authentication timeout');
    });

    it('a_json_publish_is_acknowledged_with_its_offset', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      await raw.stream.write(
        encodeMessage({
          type: 'publish_batch',
          tenant_id: 't1',
          namespace: 'default',
          stream: 'log',
          payloads: [new TextEncoder().encode('j1'), new TextEncoder().encode('j2')],
          request_id: 7,
          ack: 'per_batch',
        }),
      );
      const ok = (await raw.next()) as { type: string; request_id: number; offset: number };
      expect(ok).toMatchObject({ type: 'publish_ok', request_id: 7 });
      expect(typeof ok.offset).toBe('number');
      const felix = await client(shared, transport);
      const got = await take(
        felix.subscribe('log', { from: ok.offset, shard: 0 })[Symbol.asyncIterator](),
        2,
      );
      expect(got.map((e) => text(e.data))).toEqual(['j1', 'j2']);
      await felix.close();
      raw.stream.reset(0);
      await conn.close();
    });

    it('requests_after_one_that_waits_are_answered_in_order_in_its_read_and_the_next', async () => {
      // A request no handler serves is answered `unsupported` once earlier answers are written:
      // its read waits meanwhile, and the rest of that read and the next are served after it,
      // in request order.
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800 | FEATURE_UNSUPPORTED);
      const publish = (request_id: number) =>
        encodeMessage({
          type: 'publish_batch',
          tenant_id: 't1',
          namespace: 'default',
          stream: 'log',
          payloads: [new TextEncoder().encode(`o${request_id}`)],
          request_id,
          ack: 'per_batch',
        });
      const unserved = encodeMessage({ type: 'publish_ok', request_id: 2, offset: 0 });
      await raw.stream.write(Buffer.concat([publish(1), unserved, publish(3)]));
      await raw.stream.write(publish(4));
      const got: Array<{ type: string; request_id: number; offset?: number }> = [];
      for (let i = 0; i < 4; i++) {
        got.push((await withDeadline(raw.next(), 10_000, `answer ${i}`)) as (typeof got)[0]);
      }
      expect(got.map((a) => [a.type, a.request_id])).toEqual([
        ['publish_ok', 1],
        ['unsupported', 2],
        ['publish_ok', 3],
        ['publish_ok', 4],
      ]);
      const offsets = [got[0]!.offset!, got[2]!.offset!, got[3]!.offset!];
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      raw.stream.reset(0);
      await conn.close();
    });

    it('a_large_publish_in_the_same_read_as_auth_is_accepted', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const stream = await conn.openBidi();
      const auth = encodeMessage({
        type: 'auth',
        tenant_id: 't1',
        token: '',
        client_flags: 0x1fff,
        client_features: 0x0800,
      });
      const publish = encodeMessage({
        type: 'publish_batch',
        tenant_id: 't1',
        namespace: 'default',
        stream: 'log',
        payloads: [new Uint8Array(100 * 1024).fill(0x61)],
        request_id: 9,
        ack: 'per_batch',
      });
      expect(publish.length).toBeGreaterThan(64 * 1024 + 12); // above the pre-auth bound
      await stream.write(concat(auth, publish)); // one write: the broker reads both at once
      const decoder = new FrameDecoder();
      const answers: Array<{ type: string; request_id?: number }> = [];
      const it = stream[Symbol.asyncIterator]();
      await waitFor(async () => {
        const r = await it.next();
        if (r.done) return true;
        for (const f of decoder.push(r.value)) answers.push(decodeMessage(f.payload) as never);
        return answers.length >= 2;
      }, 'the answers to auth and the publish');
      expect(answers.map((a) => a.type)).toEqual(['auth_ok', 'publish_ok']);
      expect(answers[1]).toMatchObject({ request_id: 9 });
      stream.reset(0);
      await conn.close();
    });

    it('a_partial_frame_past_its_deadline_closes_its_stream', async () => {
      const conn = await dial(shared.url(transport), { fingerprint: shared.fingerprint });
      const raw = await rawAuthed(conn, 0x0800);
      const pattern = /felix_broker_bad_input_total\{reason="partial_frame_deadline"\} (\d+)/;
      const before = await metric(shared, pattern);
      const frame = encodeFrame(0, new Uint8Array(100));
      await raw.stream.write(frame.subarray(0, 50)); // the header and part of the body; never the rest
      const within = PARTIAL_DEADLINE_MS * 10;
      expect(await withDeadline(raw.next(), within, 'the refusal')).toMatchObject({
        type: 'error',
        code: 'invalid_request',
      });
      expect(await withDeadline(raw.next(), within, 'the stream to end')).toBeNull();
      await waitFor(async () => (await metric(shared, pattern)) === before + 1, 'the count');
      // The connection carries on.
      const again = await rawAuthed(conn, 0x0800);
      again.stream.reset(0);
      await conn.close();
    });
  });

  // Its own broker: the shared one's short auth timeout could close the connection the fuzz
  // uses when its first runs happen not to authenticate.
  describe(`bad bytes over ${transport}`, () => {
    const suite = durableBrokerForSuite(YAML);

    it('random_bytes_never_crash_the_broker', async () => {
      const conn = await dial(suite.broker.url(transport), {
        fingerprint: suite.broker.fingerprint,
      });
      const auth = encodeMessage({
        type: 'auth',
        tenant_id: 't1',
        token: '',
        client_flags: 0x1fff,
        client_features: 0x0800,
      });
      await fc.assert(
        fc.asyncProperty(
          fc.boolean(),
          fc.uint8Array({ maxLength: 512 }),
          async (authFirst, junk) => {
            const stream = await conn.openBidi();
            if (authFirst) await stream.write(auth);
            await stream.write(junk);
            await stream.end();
            // Whatever the broker makes of it, it answers only with frames, then ends the stream.
            const decoder = new FrameDecoder();
            for await (const chunk of stream)
              for (const f of decoder.push(chunk)) decodeMessage(f.payload);
          },
        ),
        { numRuns: transport === 'quic' ? 25 : 60 },
      );
      await conn.close();
      expect((await fetch(`http://127.0.0.1:${suite.broker.httpPort}/live`)).status).toBe(200);
      const felix = await connect({
        servers: [suite.broker.url(transport)],
        tenant: 't1',
        tls: { fingerprint: suite.broker.fingerprint },
      });
      expect((await felix.publish('log', 'still serving')).offset).not.toBeNull();
      await felix.close();
    });
  });
}
