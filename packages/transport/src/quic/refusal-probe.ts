/**
 * Hears the ICMP "port unreachable" a host answers to a datagram sent to a UDP port nothing
 * listens on. The library's UDP socket is not connected, and the kernel reports ICMP errors only
 * to a connected socket, so a QUIC endpoint never learns that its peer's port closed: a dial to
 * a stopped broker waited its whole dial timeout (10 s), and a connection whose broker was
 * SIGKILLed waited for its silence bound (3 s in the client) or its idle timeout, where TCP's
 * kernel answers both with a refusal or an RST at once. A probe is a one-byte datagram sent on
 * a socket of our own connected to the peer's address: too short to be a QUIC packet, a QUIC
 * endpoint drops it unread, and ECONNREFUSED on that socket means nothing listens there now. A
 * host that is down or filtered answers nothing: the dial's timeout, the client's silence bound
 * and the idle timeout still bound those.
 *
 * `RefusalProbe` runs while a dial does; for a host name it is started by the dial's resolver
 * (`resolveHostname`, handed to the library), so it probes the very address the dial resolved,
 * and a lookup that fails is reported with its own error (the library says only "Host provided
 * was not valid"). `PeerWatch` runs for a dialed connection's life and probes only once the
 * peer has left a keep-alive unanswered.
 */
import { type Socket, createSocket } from 'node:dgram';
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { DialError } from '../errors.js';
import {
  QUIC_PEER_CHECK_INTERVAL_MS,
  QUIC_PEER_PROBE_GAP_MS_MIN,
  QUIC_PEER_PROBE_GRACE_MS,
  QUIC_REFUSAL_PROBE_INTERVAL_MS,
  QUIC_REFUSAL_PROBES_MAX,
} from '../limits.js';

const PROBE = new Uint8Array(1);

/**
 * A UDP socket connected to one address that sends one-byte probes: `refused` hears the host's
 * refusal, `gaveUp` any other failure (the socket is closed then: probing stops, nothing else).
 */
class ProbeSocket {
  private socket: Socket | null;
  private connected = false;
  private wanted = false;

  constructor(
    ip: string,
    port: number,
    private readonly refused: (err: NodeJS.ErrnoException) => void,
    private readonly gaveUp: () => void,
  ) {
    const socket = createSocket(isIP(ip) === 6 ? 'udp6' : 'udp4');
    this.socket = socket;
    socket.unref(); // a probe never holds a process open
    socket.on('error', (err: NodeJS.ErrnoException) => this.failed(err));
    // A failed connect calls back with its error (and emits no 'error').
    const connected = (err?: Error) => {
      if (err) return this.failed(err as NodeJS.ErrnoException);
      this.connected = true;
      if (this.wanted) this.send();
    };
    socket.connect(port, ip, connected as () => void);
  }

  /** Sends one probe (once connected, if the connect is still on its way). */
  send(): void {
    const socket = this.socket;
    if (socket === null) return;
    if (!this.connected) {
      this.wanted = true;
      return;
    }
    this.wanted = false;
    try {
      // A connect that failed still calls back: on a socket left unconnected `send` would read
      // its callback as a port and throw. remoteAddress() throws unless the socket is connected.
      socket.remoteAddress();
      socket.send(PROBE, this.sendDone);
    } catch {
      this.failed(null); // not connected: probing gives up
    }
  }

  get open(): boolean {
    return this.socket !== null;
  }

  /** A send's own failure (the refusal may come this way rather than as an 'error' event). */
  private readonly sendDone = (err: Error | null): void => {
    if (err !== null) this.failed(err as NodeJS.ErrnoException);
  };

  private failed(err: NodeJS.ErrnoException | null): void {
    if (this.socket === null) return;
    this.close();
    if (err?.code === 'ECONNREFUSED') this.refused(err);
    else this.gaveUp();
  }

  close(): void {
    const socket = this.socket;
    this.socket = null;
    try {
      socket?.close();
    } catch {
      // already closed: nothing to release
    }
  }
}

export class RefusalProbe {
  private readonly controller = new AbortController();
  private socket: ProbeSocket | null = null;
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
    this.socket = new ProbeSocket(
      ip,
      this.port,
      (err) => {
        this.controller.abort(err);
        this.stop();
      },
      () => this.stop(), // any other failure: the probe gives up, the dial goes on
    );
    this.send();
  }

  private send(): void {
    if (this.socket === null) return;
    this.sent += 1;
    this.socket.send();
    if (this.sent < QUIC_REFUSAL_PROBES_MAX) {
      this.timer = setTimeout(() => this.send(), QUIC_REFUSAL_PROBE_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** Stops probing and closes the probe's socket (the dial ended, either way). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.socket?.close();
    this.socket = null;
  }
}

/**
 * Watches a dialed connection for a peer that is gone. Every QUIC_PEER_CHECK_INTERVAL_MS it
 * reads the connection's count of packets received. Once a keep-alive has gone unanswered
 * (nothing received for the keep-alive interval and QUIC_PEER_PROBE_GRACE_MS) it sends a probe,
 * then more while the silence lasts, each gap twice the last from QUIC_PEER_PROBE_GAP_MS_MIN up
 * to the keep-alive interval: a live peer ACKs every keep-alive, so a healthy connection sends
 * none, and a silent live one (stopped, cut off) a few per keep-alive. `gone` is called once, on
 * the host's refusal of a probe, if still nothing has come since that probe went out (a refusal
 * that raced a packet proves nothing). The probe socket, made at the first probe, stays for the
 * connection's life; one that fails locally (a route gone) is made again at the next probe.
 */
export class PeerWatch {
  private readonly timer: NodeJS.Timeout;
  private socket: ProbeSocket | null = null;
  private received: number;
  private tickMs = performance.now();
  /** Silence past which a keep-alive has gone unanswered. */
  private readonly unansweredMs: number;
  private readonly gapMaxMs: number;
  /** When the next probe of this silence is due, and the gap after it. */
  private nextProbeMs: number;
  private gapMs = QUIC_PEER_PROBE_GAP_MS_MIN;
  /** The count of packets received when the last probe went out. */
  private receivedAtProbe = -1;
  /** Probes sent so far (a figure in the connection's stats). */
  probesSent = 0;

  constructor(
    private readonly ip: string,
    private readonly port: number,
    keepAliveIntervalMs: number,
    private readonly packetsReceived: () => number,
    private readonly gone: (err: NodeJS.ErrnoException) => void,
  ) {
    const keepAlive = keepAliveIntervalMs > 0 ? keepAliveIntervalMs : 1_000;
    this.unansweredMs = keepAlive + QUIC_PEER_PROBE_GRACE_MS;
    this.gapMaxMs = Math.max(1_000, keepAlive);
    this.nextProbeMs = this.tickMs + this.unansweredMs;
    this.received = packetsReceived();
    this.timer = setInterval(() => this.check(), QUIC_PEER_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  private check(): void {
    const nowMs = performance.now();
    const received = this.packetsReceived();
    // A late check means this process stalled: what came meanwhile may not be counted yet.
    if (received !== this.received || nowMs - this.tickMs > 2 * QUIC_PEER_CHECK_INTERVAL_MS) {
      this.received = received;
      this.nextProbeMs = nowMs + this.unansweredMs;
      this.gapMs = QUIC_PEER_PROBE_GAP_MS_MIN;
    }
    this.tickMs = nowMs;
    if (nowMs < this.nextProbeMs) return;
    this.nextProbeMs = nowMs + this.gapMs;
    this.gapMs = Math.min(2 * this.gapMs, this.gapMaxMs);
    this.socket ??= new ProbeSocket(
      this.ip,
      this.port,
      (err) => this.refused(err),
      () => {
        this.socket = null; // a local failure: the next probe makes a socket again
      },
    );
    this.receivedAtProbe = received;
    this.probesSent += 1;
    this.socket.send();
  }

  private refused(err: NodeJS.ErrnoException): void {
    this.socket = null;
    if (this.packetsReceived() !== this.receivedAtProbe) return; // the peer spoke meanwhile
    this.stop();
    this.gone(err);
  }

  stop(): void {
    clearInterval(this.timer);
    this.socket?.close();
    this.socket = null;
  }
}
