/** The operator HTTP listener: /live (process up), /ready (serving: listeners up, not draining,
 *  with a control plane its first snapshots applied and its write lease held), /metrics. */
import type { LeaseView } from '../cluster/lease.js';
import { type Server, createServer } from 'node:http';
import type { BrokerMetrics } from '../metrics.js';

export interface HttpState {
  /** Why the broker is not ready, in a few words; null when it is. */
  notReady(): string | null;
  refreshGauges(): void;
}

/** What /ready weighs, as the broker knows it; `cluster` is null without a control plane. */
export interface Readiness {
  started: boolean;
  draining: boolean;
  cluster: { ready: boolean; lease: LeaseView | null } | null;
}

/** Why a broker in state `r` is not ready; null when it is. A lapsed lease counts: the broker
 *  then refuses writes to every shard it leads (`lease_lapsed`), so traffic sent to it by
 *  whoever reads /ready would be refused. */
export function notReadyReason(r: Readiness): string | null {
  if (r.draining) return 'draining';
  if (!r.started) return 'starting';
  if (r.cluster === null) return null;
  if (!r.cluster.ready) {
    return 'waiting for the control plane (first snapshots applied, registration accepted)';
  }
  if (r.cluster.lease !== null && !r.cluster.lease.held) {
    if (r.cluster.lease.gap === 'deposed')
      return 'lease_deposed: the control plane counted this node down; writes to the shards it leads are refused until the assignments sent since are applied';
    return 'lease_lapsed: no heartbeat accepted by the control plane for 0.75 of the lease; writes to the shards this broker leads are refused until one is';
  }
  return null;
}

export async function startHttp(
  host: string,
  port: number,
  metrics: BrokerMetrics,
  state: HttpState,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    if (path === '/live') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n');
    } else if (path === '/ready') {
      const why = state.notReady();
      res
        .writeHead(why === null ? 200 : 503, { 'content-type': 'text/plain' })
        .end(why === null ? 'ready\n' : `not ready: ${why}\n`);
    } else if (path === '/metrics') {
      state.refreshGauges();
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : port };
}
