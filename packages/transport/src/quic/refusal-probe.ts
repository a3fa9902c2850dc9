/**
 * While a QUIC dial runs, watches for the ICMP "port unreachable" a host answers to a datagram
 * sent to a UDP port nothing listens on. The library's UDP socket is not connected, and the
 * kernel reports ICMP errors only to a connected socket, so a dial to a stopped broker waited
 * its whole dial timeout (10 s) where a TLS dial fails at once with ECONNREFUSED. The probe
 * sends, on a socket of its own connected to the broker's address, a one-byte datagram: too
 * short to be a QUIC packet, a QUIC server drops it unread. ECONNREFUSED on that socket aborts
 * the dial through `signal`. A host that is down or filtered answers nothing: the dial's timeout
 * still bounds it.
 */
import { type Socket, createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { QUIC_REFUSAL_PROBE_INTERVAL_MS, QUIC_REFUSAL_PROBES_MAX } from '../limits.js';

const PROBE = new Uint8Array(1);

export class RefusalProbe {
  private readonly controller = new AbortController();
  private socket: Socket | null;
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;

  constructor(host: string, port: number) {
    this.socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const socket = this.socket;
    socket.unref(); // a probe never holds a process open
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') this.controller.abort(err);
      this.stop(); // any other error: the probe gives up, the dial goes on
    });
    socket.connect(port, host, () => this.send());
  }

  /** Aborted (its reason ECONNREFUSED) once the host said nothing listens on the port. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get refused(): boolean {
    return this.controller.signal.aborted;
  }

  private send(): void {
    const socket = this.socket;
    if (socket === null) return;
    this.sent += 1;
    // A failed send is reported as the socket's 'error' too.
    socket.send(PROBE, () => undefined);
    if (this.sent < QUIC_REFUSAL_PROBES_MAX) {
      this.timer = setTimeout(() => this.send(), QUIC_REFUSAL_PROBE_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** Stops probing and closes the probe's socket (the dial ended, either way). */
  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    try {
      socket?.close();
    } catch {
      // already closed: nothing to release
    }
  }
}
