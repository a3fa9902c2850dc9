/**
 * The discovery answers of a control-plane broker (issue 23, routing): `topology` names every
 * live broker and its client address, `shard_owners{kind}` names each shard's leader (node id,
 * client address, generation) from the assignment feed, or why none serves it. A cluster-aware
 * client asks them on every connect and after a redirect or a loss; the answers come from this
 * broker's copy of the feeds and node book, so they may lag the control plane by a refresh.
 */
import {
  type BrokerEndpoint,
  FEATURE_SHARD_OWNERS,
  FEATURE_TOPOLOGY,
  type Message,
  type ShardOwner,
} from '@felix/wire';
import { jsonFrame } from '../session/codec.js';
import type { HandlerTable } from '../session/handler.js';
import type { ShardKind, ShardTable } from './shard-table.js';

type Msg<T extends Message['type']> = Extract<Message, { type: T }>;

export interface DiscoveryDeps {
  /** The assignments and the node book. */
  table: Pick<ShardTable, 'assignment' | 'nodeAddresses' | 'nodeLifecycles'>;
  /** Width of a stream or cache this broker's catalog holds; undefined when it holds none. */
  width(kind: ShardKind, tenant: string, namespace: string, name: string): number | undefined;
}

/** The live brokers with a client address (a draining or departed one takes no new client). */
export function topologyOf(table: DiscoveryDeps['table']): BrokerEndpoint[] {
  const out: BrokerEndpoint[] = [];
  for (const [nodeId, addr] of table.nodeAddresses) {
    const lifecycle = table.nodeLifecycles.get(nodeId);
    if (lifecycle !== undefined && lifecycle !== 'live') continue;
    out.push({ node_id: nodeId, addr });
  }
  return out;
}

/** Each shard's owner, as the feed assigns it; `unavailable` when no leader can be named. */
export function ownersOf(
  deps: DiscoveryDeps,
  msg: Pick<Msg<'shard_owners'>, 'tenant_id' | 'namespace' | 'name' | 'kind'>,
): ShardOwner[] {
  const width = deps.width(msg.kind, msg.tenant_id, msg.namespace, msg.name) ?? 0;
  const out: ShardOwner[] = [];
  for (let shard = 0; shard < width; shard++) {
    const a = deps.table.assignment(msg.kind, msg.tenant_id, msg.namespace, msg.name, shard);
    if (a === undefined) {
      out.push({ shard, generation: 0, unavailable: 'not_assigned' });
      continue;
    }
    const addr = deps.table.nodeAddresses.get(a.leader);
    const lifecycle = deps.table.nodeLifecycles.get(a.leader);
    out.push({
      shard,
      node_id: a.leader,
      ...(addr !== undefined ? { addr } : {}),
      generation: a.generation,
      // A leader the book says is down is named (the client keeps its id) but flagged.
      ...(lifecycle === 'down' || lifecycle === 'left' ? { unavailable: 'leader_not_live' } : {}),
    });
  }
  return out;
}

export function registerDiscoveryHandlers(handlers: HandlerTable, deps: DiscoveryDeps): void {
  handlers.register('topology', {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (_msg: Msg<'topology'>, rc) => {
      await rc.answers.drain();
      await rc.stream.write(jsonFrame({ type: 'topology_view', brokers: topologyOf(deps.table) }));
      return null;
    },
  });
  handlers.register('shard_owners', {
    onPublishOnly: 'refuse',
    shardLocation: 'handler',
    handle: async (msg: Msg<'shard_owners'>, rc) => {
      await rc.answers.drain();
      // Another tenant's names are answered as unknown (no owners), as `stream_shards` does.
      const owners = msg.tenant_id === rc.auth.tenant ? ownersOf(deps, msg) : [];
      const view: Message = { type: 'shard_owners_view', owners, request_id: msg.request_id };
      await rc.stream.write(jsonFrame(view));
      return null;
    },
  });
  handlers.offer(FEATURE_TOPOLOGY | FEATURE_SHARD_OWNERS);
}
