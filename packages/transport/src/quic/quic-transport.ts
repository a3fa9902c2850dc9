/**
 * QUIC on @matrixai/quic (placeholder until the adapter lands).
 */
import { BadOptionError } from '../errors.js';
import type { Connection, DialOptions, ListenOptions, Listener } from '../types.js';

export function listenQuic(_opts: ListenOptions): Promise<Listener> {
  return Promise.reject(new BadOptionError('transport', 'quic is not implemented yet'));
}

export function dialQuic(_host: string, _port: number, _opts: DialOptions): Promise<Connection> {
  return Promise.reject(new BadOptionError('transport', 'quic is not implemented yet'));
}
