/** The operator HTTP listener: /live (process up), /ready (listeners up, not draining), /metrics. */
import { type Server, createServer } from 'node:http';
import type { BrokerMetrics } from '../metrics.js';

export interface HttpState {
  ready(): boolean;
  refreshGauges(): void;
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
      const ok = state.ready();
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ok ? 'ready\n' : 'not ready\n');
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
