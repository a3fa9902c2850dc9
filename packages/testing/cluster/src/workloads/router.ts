/**
 * Which broker a workload process talks to. Each workload client is cluster-aware (routing on,
 * the client's default): publishes, subscriptions, offset probes and group requests go to their
 * shard's owner and follow its moves by themselves (docs/replication.md, "The cluster-aware
 * client"). Cache and counter requests go to the client's entry broker instead, which forwards
 * writes to the cache shard's leader but refuses a get with `not_leader`, naming the leader, and
 * the client does not follow that. So with more than one broker a process keeps one client per
 * node (each entered at that node's address) and learns, per route (a stream shard, a publish
 * key, a cache), which node to enter at from those refusals. With one broker (or a target
 * without nodes) it is one client, as the target connects it.
 */
import type { FelixClient } from '@felix/client';
import type { ClusterNode } from '../types.js';
import { WORKLOAD_ERROR_BACKOFF_MS, WORKLOAD_OP_TIMEOUT_MS, scaled } from '../limits.js';
import { type WorkloadTarget, closeClient, pause, workloadClient } from './common.js';

type Node = Pick<ClusterNode, 'index' | 'id' | 'url'>;

/** The leader's node id a `not_leader` refusal names (`... is led by node n2 (...)`). */
export function leaderNamed(err: unknown): string | undefined {
  const e = (typeof err === 'object' && err !== null ? err : {}) as Record<string, unknown>;
  if (e.brokerCode !== 'not_leader' || typeof e.message !== 'string') return undefined;
  return /led by node (\S+)/.exec(e.message)?.[1];
}

export class NodeClients {
  private readonly clients = new Map<number, Promise<FelixClient>>();
  private readonly leaders = new Map<string, number>();
  private readonly nodes: readonly Node[];

  constructor(private readonly target: WorkloadTarget) {
    this.nodes = target.nodes ?? [];
  }

  /** More than one node to choose from. */
  get routed(): boolean {
    return this.nodes.length > 1;
  }

  /** The client for `route`: its learned leader's node, else the first one. */
  client(route: string): Promise<FelixClient> {
    const index = this.routed ? (this.leaders.get(route) ?? 0) : -1;
    let client = this.clients.get(index);
    if (client === undefined) {
      const node = this.nodes[index];
      client =
        node === undefined
          ? workloadClient(this.target)
          : workloadClient(this.target, { servers: [node.url()] });
      // A failed connect is forgotten, so that the next call tries again.
      client.catch(() => this.clients.delete(index));
      this.clients.set(index, client);
    }
    return client;
  }

  /** Learns from `err` where `route` is led; answers whether it moved the route. */
  learn(route: string, err: unknown): boolean {
    if (!this.routed) return false;
    const id = leaderNamed(err);
    const node = id === undefined ? undefined : this.nodes.find((n) => n.id === id);
    if (node === undefined || this.leaders.get(route) === node.index) return false;
    this.leaders.set(route, node.index);
    return true;
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    // A client that never connected has nothing to close.
    for (const c of all) await c.then(closeClient, () => undefined);
  }
}

/** The client for `route`, or undefined (after a backoff) when it cannot be connected now. */
export async function clientFor(
  nodes: NodeClients,
  route: string,
  signal?: AbortSignal,
): Promise<FelixClient | undefined> {
  try {
    return await nodes.client(route);
  } catch {
    // Its broker is down or cut off: nothing was invoked, the loop tries again after a pause.
    await pause(WORKLOAD_ERROR_BACKOFF_MS, signal);
    return undefined;
  }
}

/**
 * The client of the broker that leads `stream`'s `shard`. A subscription to another broker would
 * retry its `not_leader` refusal quietly for ever, so when routed a probe (a read of the shard
 * that changes nothing and is not recorded) asks first, and its refusal names the leader.
 */
export async function shardClient(
  nodes: NodeClients,
  stream: string,
  shard: number,
  signal?: AbortSignal,
): Promise<FelixClient | undefined> {
  const route = `${stream}/${shard}`;
  const client = await clientFor(nodes, route, signal);
  if (client === undefined || !nodes.routed) return client;
  try {
    await client.offsetForTime(stream, 0, {
      shard,
      signal: AbortSignal.timeout(scaled(WORKLOAD_OP_TIMEOUT_MS)),
    });
  } catch (err) {
    if (nodes.learn(route, err)) return clientFor(nodes, route, signal);
  }
  return client;
}
