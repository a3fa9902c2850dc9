export { formatAddress, parseAddress } from './address.js';
export type { Address } from './address.js';
export {
  CLOSE_CODE_FORCED,
  CLOSE_CODE_IDLE_TIMEOUT,
  CLOSE_CODE_INTERNAL,
  CLOSE_CODE_NORMAL,
  CLOSE_CODE_PEER_LOST,
  CLOSE_CODE_PROTOCOL_ERROR,
} from './codes.js';
export {
  BadAddressError,
  BadOptionError,
  BadTlsMaterialError,
  CloseTimeoutError,
  ConnectionClosedError,
  DialError,
  FingerprintMismatchError,
  IdleTimeoutError,
  ProtocolError,
  StreamLimitError,
  StreamResetError,
  StreamStateError,
  TransportError,
} from './errors.js';
export * from './limits.js';
export {
  fingerprintsEqual,
  loadOrCreateDevCertificate,
  loadTlsFiles,
  normalizeFingerprint,
  validateTlsMaterial,
} from './material/certificate.js';
export type { ValidatedMaterial } from './material/certificate.js';
export { MUX_PREFACE, MuxDecoder } from './mux/frame.js';
export type { FrameSink, Settings } from './mux/frame.js';
export { multiplex } from './mux/multiplex.js';
export type { MultiplexOptions } from './mux/multiplex.js';
export { ALPN, TLS13_CIPHER_SUITES, tlsBufferStats } from './tls/tls-transport.js';
export { liveConnections, setNativeMemoryCollector } from './util/reclaim.js';
export { dial, listen } from './transport.js';
export type {
  Connection,
  ConnectionCloseInfo,
  ConnectionStats,
  DialOptions,
  LimitOptions,
  ListenOptions,
  Listener,
  StreamKind,
  TimeoutOptions,
  TlsMaterial,
  TransportKind,
  TransportStream,
} from './types.js';
