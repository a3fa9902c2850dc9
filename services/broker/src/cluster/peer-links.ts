/**
 * This broker's links to the other brokers of its cluster. Brokers exchange nothing yet
 * (replication comes later), so today this is the peer probe and the one gate: every
 * `cluster.peer_probe_interval_ms` each other live node of the address book (at most
 * PEER_PROBE_PEERS_MAX, in node-id order) gets a bare TCP connect to its advertised address,
 * closed as soon as it opens, reported as `felix_broker_peer_reachable{peer}`. A peer named
 * `node:<id>` in the test partition file (faults/partition.ts) is reported unreachable without
 * being dialled. Every broker-to-broker dial goes through `dialAllowed` (peer-pool.ts), which
 * closes its link to a peer when `onCut` names it, so the partition covers it too.
 */
import { Socket } from 'node:net';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { PEER_PROBE_CONNECT_MS_MAX, PEER_PROBE_PEERS_MAX } from '../limits.js';
import type { Partition } from '../faults/partition.js';
import type { NodeEntry } from './control-plane-client.js';

/** Lifecycles of a node that is meant to be up (it may be dialled and is probed). */
const PROBED_LIFECYCLES = new Set(['live', 'draining']);

export interface PeerLinksDeps {
  selfId: string;
  /** 0: no probes (the gate still answers). */
  intervalMs: number;
  partition: Partition | null;
  registry: Registry;
  log: Logger;
  /** Opens and closes one TCP connection; resolves whether it opened (tests inject). */
  probe?: (addr: string, timeoutMs: number) => Promise<boolean>;
}

/** `host:port` (IPv6 hosts in brackets) split for net.connect; null when it has no port. */
export function splitAddr(addr: string): { host: string; port: number } | null {
  const at = addr.lastIndexOf(':');
  if (at <= 0) return null;
  const port = Number(addr.slice(at + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return null;
  const host = addr.slice(0, at);
  return { host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port };
}

/**
 * One bare TCP connect, destroyed as soon as it opens: the peer's TLS listener sees a client
 * that left before its handshake, which it drops without a log line (@felix/transport ignores
 * `tlsClientError`), so probes do not fill a peer's logs.
 */
export function probeTcp(addr: string, timeoutMs: number): Promise<boolean> {
  const target = splitAddr(addr);
  if (target === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.connect(target.port, target.host);
  });
}

export class PeerLinks {
  /** Probed peers: node id → advertised address. */
  private peers = new Map<string, string>();
  private readonly gauge: Gauge<'peer'>;
  private timer: NodeJS.Timeout | null = null;
  private probing = false;
  private readonly cutListeners: Array<(nodeId: string) => void> = [];

  constructor(private readonly deps: PeerLinksDeps) {
    this.gauge = new Gauge({
      name: 'felix_broker_peer_reachable',
      help: 'Whether the last TCP probe of each other live node (its advertised address) connected',
      labelNames: ['peer'],
      registers: [deps.registry],
    });
    deps.partition?.onChange((cut) => {
      for (const id of this.peers.keys()) {
        if (!cut.peers.has(id)) continue;
        this.gauge.set({ peer: id }, 0);
        for (const l of this.cutListeners) l(id);
      }
    });
  }

  /** THE gate of every connection this broker opens to another broker (false: partitioned). */
  dialAllowed(nodeId: string): boolean {
    return !(this.deps.partition?.peerCut(nodeId) ?? false);
  }

  /** Registers what to do when a peer gets cut (close the links open to it). */
  onCut(listener: (nodeId: string) => void): void {
    this.cutListeners.push(listener);
  }

  /** The address book changed: probe the other live nodes from now on. */
  setNodes(nodes: readonly NodeEntry[]): void {
    const next = new Map<string, string>();
    const others = nodes
      .filter((n) => n.nodeId !== this.deps.selfId && PROBED_LIFECYCLES.has(n.lifecycle))
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
    for (const n of others.slice(0, PEER_PROBE_PEERS_MAX)) next.set(n.nodeId, n.advertiseAddr);
    for (const id of this.peers.keys()) if (!next.has(id)) this.gauge.remove({ peer: id });
    this.peers = next;
  }

  start(): void {
    if (this.deps.intervalMs <= 0 || this.timer !== null) return;
    this.timer = setInterval(() => void this.round(), this.deps.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** One probe of every peer, all at once; skipped while the previous round still runs. */
  async round(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    const probe = this.deps.probe ?? probeTcp;
    const timeoutMs = Math.min(PEER_PROBE_CONNECT_MS_MAX, Math.max(1, this.deps.intervalMs));
    try {
      await Promise.all(
        [...this.peers].map(async ([id, addr]) => {
          const ok = this.dialAllowed(id) && (await probe(addr, timeoutMs));
          // The book may have dropped the peer while its probe ran: no gauge for a gone peer.
          if (this.peers.has(id)) this.gauge.set({ peer: id }, ok ? 1 : 0);
          if (!ok) this.deps.log.debug({ peer: id, addr }, 'peer probe failed');
        }),
      );
    } finally {
      this.probing = false;
    }
  }
}
