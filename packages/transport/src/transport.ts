/**
 * The entry points: `listen` and `dial`, dispatching on the transport kind.
 */
import { parseAddress } from './address.js';
import { BadOptionError } from './errors.js';
import { dialQuic, listenQuic } from './quic/quic-transport.js';
import { dialTls, listenTls } from './tls/tls-transport.js';
import type { Connection, DialOptions, ListenOptions, Listener } from './types.js';

export function listen(opts: ListenOptions): Promise<Listener> {
  if (opts.transport === 'tls') return listenTls(opts);
  if (opts.transport === 'quic') return listenQuic(opts);
  return Promise.reject(
    new BadOptionError('transport', `unknown transport ${String(opts.transport)}`),
  );
}

export async function dial(url: string, opts: DialOptions = {}): Promise<Connection> {
  const a = parseAddress(url);
  return a.transport === 'tls' ? dialTls(a.host, a.port, opts) : dialQuic(a.host, a.port, opts);
}
