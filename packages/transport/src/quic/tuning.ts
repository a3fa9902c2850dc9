/**
 * Socket tuning the library does not expose: larger UDP buffers (the 212 KB default overflows
 * under bursts, and the loss makes congestion control back off).
 */
import type { Socket } from 'node:dgram';
import { QUIC_UDP_BUFFER_BYTES } from '../limits.js';

/** Reaches the dgram socket through the library's internals (`.socket.socket`). */
export function tuneQuicSocket(owner: unknown): void {
  const quicSocket = (owner as { socket?: { socket?: Socket } }).socket;
  const udp = quicSocket?.socket;
  if (!udp) return;
  for (const set of [
    () => udp.setRecvBufferSize(QUIC_UDP_BUFFER_BYTES),
    () => udp.setSendBufferSize(QUIC_UDP_BUFFER_BYTES),
  ]) {
    try {
      set();
    } catch {
      // The kernel caps the size (net.core.rmem_max); a smaller buffer still works.
    }
  }
}
