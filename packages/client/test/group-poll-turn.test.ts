// Goal: a poll on a connection that is live writes its request in the call's own turn (no await
// on the connection first), and one whose client has no live connection waits for one as
// before. Method: a Group over a stand-in host whose
// connection records each poll request written and answers it with one record.
import { FEATURE_CONSUMER_GROUP, decodeFrame, encodeMessage } from '@felix/wire';
import { describe, expect, it } from 'vitest';
import { Group } from '../src/projections/group.js';
import type { ProjectionHost } from '../src/projections/host.js';
import type { BrokerConnection } from '../src/protocol/broker-connection.js';

function standIn(live: boolean) {
  const polls: Uint8Array[] = [];
  let waits = 0;
  const bc = {
    server: 'stand-in',
    scope: { tenant: 't1', namespace: 'default' },
    negotiated: { flags: 0, features: FEATURE_CONSUMER_GROUP, featuresHi: 0, window: 1 },
    openStream: async () => ({
      stream: {
        write: async (b: Uint8Array) => void polls.push(b),
        reset: () => undefined,
        end: async () => undefined,
      },
      frames: {
        next: async () => {
          const rid = polls.length;
          const records = [
            { offset: rid, payload: new Uint8Array([rid]), attempts: 1, skipped_before: 0 },
          ];
          const frame = encodeMessage({ type: 'group_records', records, request_id: rid });
          return { flags: 0, payload: decodeFrame(frame).payload };
        },
        release: async () => undefined,
      },
    }),
  } as unknown as BrokerConnection;
  const host = {
    connection: async () => {
      waits++;
      return bc;
    },
    live: () => (live ? bc : undefined),
    closed: false,
  } as ProjectionHost;
  return { group: new Group(host, 'jobs', 'workers', { shard: 0 }), polls, waits: () => waits };
}

describe('group poll turn', () => {
  it('a_poll_on_a_live_connection_writes_its_request_in_the_calls_own_turn', async () => {
    const { group, polls, waits } = standIn(true);
    await group.poll({ max: 1 }); // opens the poll stream (an await); later polls reuse it
    const second = group.poll({ max: 1 });
    expect(polls.length).toBe(2); // written before poll() returned
    await second;
    expect(waits()).toBe(0);
    // No live connection: each poll waits for one before writing.
    const offline = standIn(false);
    await offline.group.poll({ max: 1 });
    const third = offline.group.poll({ max: 1 });
    expect(offline.polls.length).toBe(1);
    await third;
    expect(offline.waits()).toBe(2);
  });
});
