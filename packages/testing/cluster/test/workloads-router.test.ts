// Goal: with several brokers a workload process talks to the broker that leads each route: a
// `not_leader` refusal moves the route to the node it names, anything else leaves it, and one
// client per node is made (pinned to that node's address) and closed at the end.
// Method: NodeClients over a fake target whose connect records the servers it was given.
import type { ConnectOptions, FelixClient } from '@felix/client';
import { describe, expect, it } from 'vitest';
import { NodeClients, leaderNamed } from '../src/workloads/router.js';

function fakeTarget(brokers: number) {
  const connects: string[][] = [];
  let closed = 0;
  const nodes = Array.from({ length: brokers }, (_, index) => ({
    index,
    id: `n${index}`,
    url: () => `quic://127.0.0.1:${7000 + index}`,
  }));
  const target = {
    nodes,
    connect: async (extra?: Partial<ConnectOptions>) => {
      connects.push(extra?.servers ?? ['all']);
      return { close: async () => void closed++ } as unknown as FelixClient;
    },
  };
  return { target, connects, closedCount: () => closed };
}

const notLeader = (node: string) =>
  Object.assign(
    new Error(`stream t/d/s shard 0 is led by node ${node} (client address x) at generation 1`),
    {
      brokerCode: 'not_leader',
    },
  );

describe('routing workload clients to shard leaders', () => {
  it('a_not_leader_refusal_moves_a_route_to_the_broker_it_names', async () => {
    expect(leaderNamed(notLeader('n2'))).toBe('n2');
    expect(leaderNamed(new Error('led by node n2'))).toBeUndefined();
    const { target, connects, closedCount } = fakeTarget(3);
    const nodes = new NodeClients(target);
    const first = await nodes.client('history-0/1');
    expect(connects).toEqual([['quic://127.0.0.1:7000']]);
    expect(nodes.learn('history-0/1', new Error('timeout'))).toBe(false);
    expect(nodes.learn('history-0/1', notLeader('n2'))).toBe(true);
    // Told again of the leader it already uses: nothing moves.
    expect(nodes.learn('history-0/1', notLeader('n2'))).toBe(false);
    const second = await nodes.client('history-0/1');
    expect(second).not.toBe(first);
    expect(connects).toEqual([['quic://127.0.0.1:7000'], ['quic://127.0.0.1:7002']]);
    // Another route still starts at the first node, on the client already made for it.
    expect(await nodes.client('history-1/0')).toBe(first);
    await nodes.close();
    expect(closedCount()).toBe(2);
  });

  it('with_one_broker_every_route_shares_one_client_connected_as_the_target_does', async () => {
    const { target, connects } = fakeTarget(1);
    const nodes = new NodeClients(target);
    expect(nodes.routed).toBe(false);
    const a = await nodes.client('history-0/0');
    expect(nodes.learn('history-0/0', notLeader('n0'))).toBe(false);
    expect(await nodes.client('cache:history-cache')).toBe(a);
    expect(connects).toEqual([['all']]);
    await nodes.close();
  });
});
