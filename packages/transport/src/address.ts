/**
 * Parses transport addresses: `quic://host:port` and `tls://host:port` (IPv6 in brackets).
 */
import { BadAddressError } from './errors.js';
import type { TransportKind } from './types.js';

export interface Address {
  transport: TransportKind;
  host: string;
  port: number;
}

export function parseAddress(url: string): Address {
  const m = /^(quic|tls):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]\s]+):(\d{1,5})\/?$/.exec(url);
  if (!m) throw new BadAddressError(url);
  const port = Number(m[3]);
  if (port < 1 || port > 65535) throw new BadAddressError(url);
  const rawHost = m[2]!;
  const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
  return { transport: m[1] as TransportKind, host, port };
}

export function formatAddress(a: Address): string {
  const host = a.host.includes(':') ? `[${a.host}]` : a.host;
  return `${a.transport}://${host}:${a.port}`;
}
