import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';

/** A port free for both TCP and UDP on 127.0.0.1 at the time of the call. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
      });
    });
    const udpFree = await new Promise<boolean>((resolve) => {
      const sock = createSocket('udp4');
      sock.once('error', () => resolve(false));
      sock.bind(port, '127.0.0.1', () => sock.close(() => resolve(true)));
    });
    if (udpFree) return port;
  }
  throw new Error('no free TCP+UDP port found in 20 attempts');
}
