/**
 * What quiche itself costs through its napi binding, with no socket, no event loop and no
 * Felix code: a client and a server quiche connection in this process, their datagrams handed
 * from one to the other in memory. This is the floor under the QUIC transport's CPU (the
 * binding is a prebuilt native module; it cannot be changed without a Rust rebuild). Reports
 *   - one-way bulk: µs of CPU per KiB at the sender (streamSend + send) and at the receiver
 *     (recv + streamRecv), with `--chunk` bytes per streamSend (default 64 KiB, as a publish
 *     batch arrives) and datagrams up to the loopback size Felix configures;
 *   - a 100 B exchange: streamSend, send, recv, streamRecv and the ACK back, in µs;
 *   - single calls: a `send` with nothing to send, `timeout`, `isReadable`, `Header.fromSlice`.
 *
 * `--ack-every N` returns the receiver's ACKs only after every N chunks, so quiche holds more
 * unacknowledged data, as it does behind a real socket.
 *
 *   node --import tsx scripts/bench/transport/quiche-floor.ts [--chunk 65536] [--mib 256]
 *        [--ack-every 1]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevCertificate } from '@felix/transport';
import { argValue, assertFreshBuild } from '@felix/testing-bench-kit';

assertFreshBuild(import.meta.resolve('@felix/transport'));

const CHUNK = Number(argValue('--chunk', '65536'));
const MIB = Number(argValue('--mib', '256'));
/** The receiver's ACKs go back after this many chunks: more unacknowledged data in quiche. */
const ACK_EVERY = Number(argValue('--ack-every', '1'));
/** As QUIC_LOOPBACK_DATAGRAM_BYTES in @felix/transport's limits (quiche caps packets at 16 KiB). */
const DATAGRAM_BYTES = 65_507;

interface HostPort {
  host: string;
  port: number;
}
interface QuicheConn {
  send(out: Uint8Array): [number, unknown] | null;
  recv(data: Uint8Array, info: { to: HostPort; from: HostPort }): number;
  streamSend(id: number, data: Uint8Array, fin: boolean): number | null;
  streamRecv(id: number, out: Uint8Array): [number, boolean] | null;
  timeout(): number | null;
  isReadable(): boolean;
  isEstablished(): boolean;
}

// The vendored library is @felix/transport's dependency, not this package's: load it from there.
const vendorDist = new URL(
  '../node_modules/@felix-vendor/matrixai-quic/dist/',
  import.meta.resolve('@felix/transport'),
);
const { buildQuicheConfig, clientDefault, serverDefault } = await import(
  new URL('config.js', vendorDist).href
);
const quiche = (await import(new URL('native/quiche.js', vendorDist).href)).default;

const dir = mkdtempSync(join(tmpdir(), 'felix-quiche-floor-'));
const material = await loadOrCreateDevCertificate(dir);
rmSync(dir, { recursive: true, force: true });
const common = {
  maxRecvUdpPayloadSize: DATAGRAM_BYTES,
  maxSendUdpPayloadSize: DATAGRAM_BYTES,
  initialMaxData: 16 * 1024 * 1024,
  initialMaxStreamDataBidiLocal: 1024 * 1024,
  initialMaxStreamDataBidiRemote: 1024 * 1024,
  applicationProtos: ['felix/1'],
};
const serverConfig = buildQuicheConfig({
  ...serverDefault,
  ...common,
  key: material.keyPem,
  cert: material.certPem,
});
const clientConfig = buildQuicheConfig({ ...clientDefault, ...common, verifyPeer: false });
const A: HostPort = { host: '127.0.0.1', port: 1000 };
const B: HostPort = { host: '127.0.0.1', port: 2000 };
const toServer = { to: B, from: A };
const toClient = { to: A, from: B };
const client: QuicheConn = quiche.Connection.connect(null, randomBytes(20), A, B, clientConfig);
let server = null as QuicheConn | null;
const out = Buffer.alloc(DATAGRAM_BYTES);
const scratch = Buffer.alloc(64 * 1024);

/** Hands every datagram `from` has to `to`; the first one creates the server. */
function pump(from: QuicheConn, toServerSide: boolean): number {
  let n = 0;
  for (let r = from.send(out); r !== null; r = from.send(out)) {
    const d = Buffer.from(out.subarray(0, r[0]));
    if (toServerSide) {
      server ??= quiche.Connection.accept(randomBytes(20), null, B, A, serverConfig);
      server!.recv(d, toServer);
    } else client.recv(d, toClient);
    n++;
  }
  return n;
}

for (let i = 0; i < 10 && !(client.isEstablished() && server?.isEstablished()); i++) {
  pump(client, true);
  if (server) pump(server, false);
}
if (!server || !client.isEstablished()) throw new Error('quiche pair did not establish');
const srv: QuicheConn = server;

function perCall(name: string, n: number, f: () => void): void {
  for (let i = 0; i < 1000; i++) f();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const c = process.cpuUsage(c0);
  console.log(`${name.padEnd(44)} ${((c.user + c.system) / n).toFixed(2)} µs`);
}

perCall('send with nothing to send', 50_000, () => client.send(out));
perCall('timeout', 50_000, () => client.timeout());
perCall('isReadable', 50_000, () => client.isReadable());
const small = Buffer.alloc(100, 7);
perCall('100 B exchange (both sides, with the ACK back)', 20_000, () => {
  client.streamSend(0, small, false);
  pump(client, true);
  srv.streamRecv(0, scratch);
  pump(srv, false);
});
client.streamSend(0, small, false);
const r = client.send(out);
const shortPacket = Buffer.from(out.subarray(0, r![0]));
srv.recv(Buffer.from(shortPacket), toServer);
srv.streamRecv(0, scratch);
perCall('Header.fromSlice (short header)', 50_000, () =>
  quiche.Header.fromSlice(shortPacket, quiche.MAX_CONN_ID_LEN),
);

// One-way bulk: CPU at each end, per KiB delivered.
const chunk = Buffer.alloc(CHUNK, 5);
const total = MIB * 1024 * 1024;
let senderUs = 0;
let receiverUs = 0;
let datagrams = 0;
let bytes = 0;
let chunks = 0;
let stalls = 0;
for (let moved = 0; moved < total; chunks++) {
  const s0 = process.cpuUsage();
  const taken = client.streamSend(0, chunk, false) ?? 0;
  const packets: Buffer[] = [];
  for (let p = client.send(out); p !== null; p = client.send(out)) {
    packets.push(Buffer.from(out.subarray(0, p[0])));
    bytes += p[0];
  }
  const s1 = process.cpuUsage(s0);
  for (const d of packets) {
    srv.recv(d, toServer);
    for (let got = srv.streamRecv(0, scratch); got !== null; got = srv.streamRecv(0, scratch))
      moved += got[0];
  }
  const s2 = process.cpuUsage(s0);
  // The ACKs and flow-control credit back (counted at neither end).
  if (chunks % ACK_EVERY === ACK_EVERY - 1 || taken === 0) pump(srv, false);
  senderUs += s1.user + s1.system;
  receiverUs += s2.user + s2.system - (s1.user + s1.system);
  datagrams += packets.length;
  stalls = taken === 0 && packets.length === 0 ? stalls + 1 : 0;
  if (stalls > 2) throw new Error('quiche took nothing and sent nothing, even after the ACKs');
}
const kib = total / 1024;
console.log(
  `bulk ${MIB} MiB in ${CHUNK} B streamSends: ${datagrams} datagrams of ${(bytes / datagrams).toFixed(0)} B on average; ` +
    `sender ${(senderUs / kib).toFixed(3)} µs/KiB, receiver ${(receiverUs / kib).toFixed(3)} µs/KiB`,
);
