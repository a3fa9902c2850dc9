/**
 * While a QUIC dial runs, watches for the ICMP "port unreachable" a host answers to a datagram
 * sent to a UDP port nothing listens on. The library's UDP socket is not connected, and the
 * kernel reports ICMP errors only to a connected socket, so a dial to a stopped broker waited
 * its whole dial timeout (10 s) where a TLS dial fails at once with ECONNREFUSED. The probe
 * sends, on a socket of its own connected to the address the dial goes to, a one-byte datagram:
 * too short to be a QUIC packet, a QUIC server drops it unread. ECONNREFUSED on that socket
 * aborts the dial through `signal`. A host that is down or filtered answers nothing: the dial's
 * timeout still bounds it.
 *
 * For a host name the probe is started by the dial's resolver (`resolveHostname`, handed to the
 * library), so it probes the very address the dial resolved, and a lookup that fails is reported
 * with its own error (the library says only "Host provided was not valid").
 */
import { type Socket, createSocket } from 'node:dgram';
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { DialError } from '../errors.js';
import { QUIC_REFUSAL_PROBE_INTERVAL_MS, QUIC_REFUSAL_PROBES_MAX } from '../limits.js';

const PROBE = new Uint8Array(1);

export class RefusalProbe {
  private readonly controller = new AbortController();
  private socket: Socket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;
  private stopped = false;
  /** The lookup of a host name failed with this. */
  private lookupFailure: Error | null = null;

  constructor(
    host: string,
    private readonly port: number,
  ) {
    if (isIP(host) !== 0) this.start(host);
  }

  /** Aborted (its reason ECONNREFUSED) once the host said nothing listens on the port. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * The library's resolver of a host name: as its own (dns.lookup, either family, in the
   * resolver's order), then the probe of the address found.
   */
  readonly resolveHostname = async (name: string): Promise<string> => {
    try {
      const { address } = await dns.lookup(name, { family: 0, verbatim: true });
      this.start(address);
      return address;
    } catch (err) {
      this.lookupFailure = err as Error;
      throw err;
    }
  };

  /** Why the dial to `address` failed, when the probe knows: the refusal or the failed lookup. */
  failure(address: string): DialError | null {
    if (this.controller.signal.aborted) {
      return new DialError(
        address,
        `connection refused (nothing listens on UDP port ${this.port})`,
        {
          cause: this.controller.signal.reason,
        },
      );
    }
    if (this.lookupFailure !== null) {
      return new DialError(address, this.lookupFailure.message, { cause: this.lookupFailure });
    }
    return null;
  }

  private start(ip: string): void {
    if (this.stopped || this.socket !== null) return;
    const socket = createSocket(isIP(ip) === 6 ? 'udp6' : 'udp4');
    this.socket = socket;
    socket.unref(); // a probe never holds a process open
    socket.on('error', (err: NodeJS.ErrnoException) => this.failed(err));
    // A failed connect calls back with its error (and emits no 'error').
    const connected = (err?: Error) =>
      err ? this.failed(err as NodeJS.ErrnoException) : this.send();
    socket.connect(this.port, ip, connected as () => void);
  }

  private send(): void {
    const socket = this.socket;
    if (socket === null) return;
    this.sent += 1;
    try {
      // A connect that failed still calls back: on a socket left unconnected `send` would read
      // its callback as a port and throw. remoteAddress() throws unless the socket is connected.
      socket.remoteAddress();
      socket.send(PROBE, this.sendDone);
    } catch {
      this.stop(); // not connected: the probe gives up, the dial goes on
      return;
    }
    if (this.sent < QUIC_REFUSAL_PROBES_MAX) {
      this.timer = setTimeout(() => this.send(), QUIC_REFUSAL_PROBE_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** A send's own failure (the refusal may come this way rather than as an 'error' event). */
  private readonly sendDone = (err: Error | null): void => {
    if (err !== null) this.failed(err as NodeJS.ErrnoException);
  };

  private failed(err: NodeJS.ErrnoException): void {
    if (err.code === 'ECONNREFUSED') this.controller.abort(err);
    this.stop(); // any other error: the probe gives up, the dial goes on
  }

  /** Stops probing and closes the probe's socket (the dial ended, either way). */
  stop(): void {
    this.stopped = true;
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
