/**
 * Every operating error @felix/transport raises. Callers branch on `code` (stable) and `retry`.
 */
import { FelixError, type FelixErrorOptions } from '@felix/common';

export abstract class TransportError extends FelixError {}

/** The address is not `quic://host:port` or `tls://host:port`. */
export class BadAddressError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_BAD_ADDRESS';
  constructor(readonly address: string) {
    super(
      `bad transport address ${JSON.stringify(address)}: want quic://host:port or tls://host:port`,
    );
  }
}

/** An option is out of its allowed range (e.g. an idle timeout of 0). */
export class BadOptionError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_BAD_OPTION';
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`bad transport option ${option}: ${message}`);
  }
}

/** Certificate or key material cannot be used; raised at start, never at the first handshake. */
export class BadTlsMaterialError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_BAD_TLS_MATERIAL';
  constructor(message: string, options?: FelixErrorOptions) {
    super(message, options);
  }
}

/** The peer's certificate does not match the pinned SHA-256 fingerprint. */
export class FingerprintMismatchError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_FINGERPRINT_MISMATCH';
  constructor(
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`peer certificate fingerprint ${actual} does not match the pinned ${expected}`);
  }
}

/**
 * Dialling failed: refused, unreachable, handshake failed or timed out. `reason` is the failure
 * in words (the native cause of a QUIC handshake says only "TlsFail"); `certificate` is true when
 * the server's certificate was not accepted (untrusted chain, wrong name, pin mismatch), the
 * commonest first mistake, which a caller can answer with a hint about its trust options.
 */
export class DialError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_DIAL_FAILED';
  constructor(
    readonly address: string,
    readonly reason: string,
    options?: FelixErrorOptions,
    readonly certificate = false,
  ) {
    super(`dial ${address} failed: ${reason}`, { retry: 'retry_after_backoff', ...options });
  }
}

/** The connection is closed (by us, by the peer, by the idle timeout or by a protocol error). */
export class ConnectionClosedError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_CONNECTION_CLOSED';
  constructor(
    readonly closeCode: number,
    readonly reason: string,
    options?: FelixErrorOptions,
  ) {
    super(`connection closed (code ${closeCode}): ${reason}`, { retry: 'reconnect', ...options });
  }
}

/** Nothing was heard from the peer for the idle timeout (a dead or partitioned peer). */
export class IdleTimeoutError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_IDLE_TIMEOUT';
  constructor(readonly idleTimeoutMs: number) {
    super(`no traffic from the peer for ${idleTimeoutMs} ms`, { retry: 'reconnect' });
  }
}

/** The peer broke the multiplexer protocol (bad frame, flow-control violation, bad stream id). */
export class ProtocolError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_PROTOCOL';
  constructor(message: string, options?: FelixErrorOptions) {
    super(message, { retry: 'reconnect', ...options });
  }
}

/** The stream was reset, by the peer or by us, with an application code. */
export class StreamResetError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_STREAM_RESET';
  constructor(
    readonly streamId: number,
    readonly resetCode: number,
    readonly byPeer: boolean,
  ) {
    super(`stream ${streamId} reset by ${byPeer ? 'peer' : 'us'} with code ${resetCode}`);
  }
}

/** Opening one more stream would exceed the peer's concurrent-stream limit. */
export class StreamLimitError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_STREAM_LIMIT';
  constructor(
    readonly kind: 'bidi' | 'uni',
    readonly limit: number,
  ) {
    super(`cannot open another ${kind} stream: the peer allows ${limit} at once`, {
      retry: 'retry_after_backoff',
    });
  }
}

/** A write after `end()` or on a receive-only stream. */
export class StreamStateError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_STREAM_STATE';
}

/** `close()` did not finish gracefully within its bound and was forced. */
export class CloseTimeoutError extends TransportError {
  readonly code = 'FELIX_TRANSPORT_CLOSE_TIMEOUT';
  constructor(readonly closeTimeoutMs: number) {
    super(`graceful close did not finish within ${closeTimeoutMs} ms; forced`);
  }
}
