import { readFileSync } from 'node:fs';
import { isFetchBlockedPort } from '@felix/common';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { NoFreePortError } from './errors.js';
import { FREE_PORT_ATTEMPTS_MAX, FREE_PORT_MIN } from './limits.js';

/** The kernel's documented default for the local ports of outgoing connections (Linux). */
const EPHEMERAL_DEFAULT = { low: 32768, high: 60999 };

/** The range the kernel draws the local ports of outgoing connections from. */
export function ephemeralPortRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! > 0 && high! >= low!)
      return { low: low!, high: high! };
  } catch {
    // Not Linux (no such file): the default below stands for it.
  }
  return EPHEMERAL_DEFAULT;
}

/** Whether `port` (0: any) binds on 127.0.0.1 for TCP; the port bound, or null. */
function bindsTcp(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : null));
    });
  });
}

function bindsUdp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createSocket('udp4');
    sock.once('error', () => resolve(false));
    sock.bind(port, '127.0.0.1', () => sock.close(() => resolve(true)));
  });
}

/**
 * A port free for both TCP and UDP on 127.0.0.1 at the time of the call, below the kernel's
 * ephemeral range where the range leaves room. A process restarted on its ports (a broker
 * killed and started again) would otherwise find one taken meanwhile by the local end of some
 * outgoing connection, or by a dialer retrying the dead port that the kernel connected to
 * itself: both draw only from the ephemeral range. Never one `fetch` refuses (`isFetchBlockedPort`).
 * `random` is for tests that steer the pick.
 */
export async function freePort(random: () => number = Math.random): Promise<number> {
  const { low } = ephemeralPortRange();
  const room = low - FREE_PORT_MIN;
  for (let attempt = 0; attempt < FREE_PORT_ATTEMPTS_MAX; attempt++) {
    const wanted = room > 0 ? FREE_PORT_MIN + Math.floor(random() * room) : 0;
    if (isFetchBlockedPort(wanted)) continue;
    const port = await bindsTcp(wanted);
    if (port !== null && !isFetchBlockedPort(port) && (await bindsUdp(port))) return port;
  }
  throw new NoFreePortError(
    `no port free for both TCP and UDP on 127.0.0.1 in ${FREE_PORT_ATTEMPTS_MAX} attempts`,
  );
}

/**
 * A TCP port on 127.0.0.1 bound a moment ago and released: nothing listens on it, so a connect
 * there is refused (tests of an unreachable peer).
 */
export async function releasedTcpPort(): Promise<number> {
  const port = await bindsTcp(0);
  if (port === null) throw new NoFreePortError('no TCP port could be bound on 127.0.0.1');
  return port;
}
