// Goal: a group request naming the group asked for last reuses its checked scope (one registry
// key per group, not one per request) only while the request names the same group on the same
// stream runtime and shard; a stream replaced or removed, another shard, group or scope, or a bad
// name is looked up and checked afresh. Method: a ScopeMemo over a stand-in stream lookup whose
// runtimes the test replaces.
import { describe, expect, it } from 'vitest';
import type { StreamRuntime } from '../src/streams/shard.js';
import { type GroupMsg, ScopeMemo } from '../src/groups/requests.js';
import { Refusal } from '../src/session/refusal.js';

function runtime(): StreamRuntime {
  const shard = { store: {}, appliedNext: 0 };
  return { config: { durable: true }, shards: [shard, { ...shard }] } as unknown as StreamRuntime;
}

const ack = (over: Partial<GroupMsg> = {}) =>
  ({
    type: 'group_ack_batch',
    tenant_id: 't1',
    namespace: 'default',
    stream: 'jobs',
    shard: 0,
    group: 'workers',
    offsets: [1],
    request_id: 1,
    ...over,
  }) as GroupMsg;

describe('group scope memo', () => {
  it('a_group_scope_is_reused_only_while_the_same_group_stream_runtime_and_shard_stand', () => {
    let jobs: StreamRuntime | undefined = runtime();
    const memo = new ScopeMemo((_t, _n, name) => (name === 'jobs' ? jobs : undefined));
    const first = memo.of(ack());
    expect(first.key).toBe(JSON.stringify(['t1', 'default', 'jobs', 0, 'workers']));
    expect(memo.of(ack({ request_id: 2 }))).toBe(first);
    // Another shard, group or namespace: a scope of its own.
    expect(memo.of(ack({ shard: 1 })).id.shard).toBe(1);
    expect(memo.of(ack({ group: 'others' })).group).toBe('others');
    expect(memo.of(ack({ namespace: 'ns' })).id.namespace).toBe('ns');
    const again = memo.of(ack());
    expect(again).not.toBe(first);
    expect(again).toStrictEqual(first);
    // The stream replaced (a reload): the new runtime's shard, not the old one's.
    jobs = runtime();
    const replaced = memo.of(ack());
    expect(replaced.source).toBe(jobs.shards[0]);
    // Removed: refused, not answered from the memo.
    jobs = undefined;
    expect(() => memo.of(ack())).toThrow(Refusal);
    jobs = runtime();
    expect(() => memo.of(ack({ group: '' }))).toThrow(Refusal);
    expect(() => memo.of(ack({ shard: 5 }))).toThrow(Refusal);
  });
});
