/**
 * Goal: a connection whose complete requests pin more than its answer budget is not read until
 * its answers drain, and nothing it sent is lost or reordered meanwhile (the publish window is
 * counted in answers; this bound is in bytes).
 * Method: a real ClientSession over a stand-in connection whose one stream hands out chunks
 * from a queue and counts the chunks taken; a stand-in publish handler whose answers the test
 * settles. "Not read" is checked after the event loop ran everything it had (setImmediate), so
 * no timing is assumed.
 */
import type { Connection, TransportStream } from '@felix/transport';
import { decodeMessage, encodeMessage } from '@felix/wire';
import { waitFor } from '@felix/testing-harness';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Authenticator } from '../src/session/authenticator.js';
import { loadConfig } from '../src/config/load.js';
import * as L from '../src/limits.js';
import { BrokerMetrics } from '../src/metrics.js';
import { ClientSession } from '../src/session/client-session.js';
import { HandlerTable } from '../src/session/handler.js';

const BUDGET_BYTES = 64 * 1024;
const PAYLOAD_BYTES = 20 * 1024;
const REQUESTS = 8;

/** A stream whose reads come from `feed` and whose writes are kept. */
function standInStream() {
  const chunks: Uint8Array[] = [];
  const writes: Uint8Array[] = [];
  let taken = 0;
  let wake: (() => void) | null = null;
  const stream = {
    id: 0,
    kind: 'bidi',
    write: async (chunk: Uint8Array) => {
      writes.push(chunk);
    },
    end: async () => undefined,
    reset: () => undefined,
    closed: new Promise<void>(() => undefined),
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<Uint8Array>> => {
        while (chunks.length === 0) await new Promise<void>((r) => (wake = r));
        taken++;
        return { value: chunks.shift()!, done: false };
      },
      return: async () => ({ value: undefined, done: true as const }),
    }),
  } as unknown as TransportStream;
  const feed = (chunk: Uint8Array) => {
    chunks.push(chunk);
    wake?.();
  };
  return { stream, feed, writes, taken: () => taken };
}

function standInConnection(stream: TransportStream): Connection {
  return {
    remote: 'test',
    transport: 'tls',
    incoming: async function* () {
      yield stream;
      await new Promise<void>(() => undefined); // open for the test's length
    },
    close: async () => undefined,
  } as unknown as Connection;
}

const turnsRun = () => new Promise<void>((resolve) => setImmediate(resolve));

function publish(i: number): Uint8Array {
  return encodeMessage({
    type: 'publish_batch',
    tenant_id: 't1',
    namespace: 'default',
    stream: 'log',
    payloads: [new Uint8Array(PAYLOAD_BYTES).fill(i)],
    request_id: i,
    ack: 'per_batch',
  });
}

describe('answer byte budget', () => {
  it('a_connection_over_its_answer_budget_is_not_read_until_its_answers_drain', async () => {
    const config = loadConfig({
      FELIX_BROKER_MAX_FRAME_BYTES: String(BUDGET_BYTES),
      FELIX_BROKER_CONNECTION_ANSWER_BYTES: String(BUDGET_BYTES),
      FELIX_BROKER_CONNECTION_PARTIAL_FRAME_BYTES: String(BUDGET_BYTES),
    });
    const handlers = new HandlerTable();
    const handled: number[] = [];
    const settle: Array<() => void> = [];
    handlers.register('publish_batch', {
      onPublishOnly: 'serve',
      shardLocation: 'handler',
      handle: (msg, rc) => {
        const id = msg.request_id!;
        handled.push(id);
        rc.answers.push(
          new Promise((resolve) => {
            settle[id] = () => resolve(encodeMessage({ type: 'publish_ok', request_id: id }));
          }),
        );
        return null;
      },
    });
    const s = standInStream();
    const session = new ClientSession(standInConnection(s.stream), {
      config,
      metrics: new BrokerMetrics(),
      log: pino({ level: 'silent' }),
      draining: () => false,
      handlers,
      authenticator: Authenticator.dev(),
    });
    void session.run();
    s.feed(encodeMessage({ type: 'auth', tenant_id: 't1', token: '', client_flags: 0 }));
    for (let i = 0; i < REQUESTS; i++) s.feed(publish(i));

    // Each request pins more than a third of the budget: the fourth takes it over.
    const over = Math.floor(BUDGET_BYTES / publish(0).length) + 1;
    await waitFor(() => handled.length === over, 'the requests up to the budget');
    await turnsRun();
    expect(session.bytes.answersOver).toBe(true);
    expect(handled.length).toBe(over);
    expect(s.taken()).toBe(1 + over); // `auth` and those requests: nothing more was read

    // One answer drains: back within the budget, reading resumes.
    settle[0]!();
    await waitFor(() => handled.length > over, 'reading to resume');
    for (let i = 1; i < REQUESTS; i++) {
      await waitFor(() => settle[i] !== undefined, `request ${i}`);
      settle[i]!();
    }
    const answered = () =>
      s.writes.slice(1).flatMap((w) => splitFrames(w).map((m) => m.request_id));
    await waitFor(() => answered().length === REQUESTS, 'every answer');
    expect(handled).toEqual([...Array(REQUESTS).keys()]);
    expect(answered()).toEqual([...Array(REQUESTS).keys()]);
    expect(session.bytes.answers).toBe(0);
  });
});

describe('request budget config', () => {
  it('request_budgets_that_do_not_nest_are_refused_at_startup', () => {
    const mib = (n: number) => String(n * 1024 * 1024);
    expect(() => loadConfig({ FELIX_BROKER_CONNECTION_PARTIAL_FRAME_BYTES: mib(8) })).toThrow(
      /broker\.connection_partial_frame_bytes.*broker\.max_frame_bytes/,
    );
    expect(() => loadConfig({ FELIX_BROKER_CONNECTION_ANSWER_BYTES: mib(8) })).toThrow(
      /broker\.connection_answer_bytes.*broker\.max_frame_bytes/,
    );
    expect(() => loadConfig({ FELIX_BROKER_INFLIGHT_REQUEST_BYTES: mib(32) })).toThrow(
      /broker\.inflight_request_bytes/,
    );
    const ok = loadConfig({
      FELIX_BROKER_MAX_FRAME_BYTES: mib(1),
      FELIX_BROKER_CONNECTION_PARTIAL_FRAME_BYTES: mib(1),
      FELIX_BROKER_CONNECTION_ANSWER_BYTES: mib(2),
      FELIX_BROKER_INFLIGHT_REQUEST_BYTES: mib(2),
    });
    expect(ok.broker.inflight_request_bytes).toBe(2 * 1024 * 1024);
    // The defaults nest as the loader demands.
    expect(L.CONNECTION_PARTIAL_FRAME_BYTES_DEFAULT).toBeGreaterThanOrEqual(L.FRAME_BYTES_DEFAULT);
    expect(L.CONNECTION_ANSWER_BYTES_DEFAULT).toBeGreaterThanOrEqual(L.FRAME_BYTES_DEFAULT);
    expect(L.INFLIGHT_REQUEST_BYTES_DEFAULT).toBeGreaterThanOrEqual(
      Math.max(L.CONNECTION_PARTIAL_FRAME_BYTES_DEFAULT, L.CONNECTION_ANSWER_BYTES_DEFAULT),
    );
    expect(L.INFLIGHT_REQUEST_BYTES_DEFAULT).toBeLessThanOrEqual(L.REQUEST_BUDGET_BYTES_MAX);
  });
});

/** The JSON messages of a write of one or more answers. */
function splitFrames(bytes: Uint8Array): Array<{ request_id?: number }> {
  const out: Array<{ request_id?: number }> = [];
  for (let at = 0; at < bytes.length; ) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(8);
    out.push(decodeMessage(bytes.subarray(at + 12, at + 12 + length)) as never);
    at += 12 + length;
  }
  return out;
}
