/**
 * The standalone catalog: the streams and caches declared in the config, and the open shards of
 * each stream. A stream is addressed by (tenant, namespace, name); its shards are opened at
 * startup (durable ones through `openStore`) and closed on shutdown.
 */
import type { BrokerConfig, CacheConfig, StreamConfig } from '../config/types.js';
import { Shard, type ShardHooks, type ShardStore, type StreamRuntime } from '../streams/shard.js';

export type { StreamRuntime };

export type OpenStore = (stream: StreamConfig, shard: number) => Promise<ShardStore>;

export function streamKey(tenant: string, namespace: string, name: string): string {
  return `${tenant}\u0000${namespace}\u0000${name}`;
}

export class Catalog {
  private readonly streams = new Map<string, StreamRuntime>();
  readonly caches: CacheConfig[];

  private constructor(caches: CacheConfig[]) {
    this.caches = caches;
  }

  static async open(cfg: BrokerConfig, openStore: OpenStore, hooks: ShardHooks): Promise<Catalog> {
    const catalog = new Catalog(cfg.caches);
    const ring = { records: cfg.memory.ring_records, bytes: cfg.memory.ring_bytes };
    try {
      for (const s of cfg.streams) {
        const shards: Shard[] = [];
        catalog.streams.set(streamKey(s.tenant, s.namespace, s.name), { config: s, shards });
        for (let i = 0; i < s.shards; i++) {
          const store = s.durable ? await openStore(s, i) : null;
          shards.push(new Shard(`${s.tenant}/${s.namespace}/${s.name}/${i}`, store, ring, hooks));
        }
      }
    } catch (err) {
      await catalog.close();
      throw err;
    }
    return catalog;
  }

  get(tenant: string, namespace: string, name: string): StreamRuntime | undefined {
    return this.streams.get(streamKey(tenant, namespace, name));
  }

  /** Control-plane mode: serves a stream whose shards the caller (cluster/shard-table) manages. */
  installStream(runtime: StreamRuntime): void {
    const c = runtime.config;
    this.streams.set(streamKey(c.tenant, c.namespace, c.name), runtime);
  }

  /** Control-plane mode: forgets a stream; the caller has closed its shards. */
  removeStream(tenant: string, namespace: string, name: string): void {
    this.streams.delete(streamKey(tenant, namespace, name));
  }

  all(): StreamRuntime[] {
    return [...this.streams.values()];
  }

  /** Waits for in-flight appends (bounded by the caller), then closes every store. */
  async settle(): Promise<void> {
    await Promise.all(this.all().flatMap((s) => s.shards.map((sh) => sh.settled())));
  }

  async close(): Promise<void> {
    const closes: Promise<void>[] = [];
    for (const s of this.streams.values()) {
      for (const sh of s.shards) {
        sh.retire();
        if (sh.store) closes.push(sh.store.close());
      }
    }
    await Promise.allSettled(closes);
  }
}
