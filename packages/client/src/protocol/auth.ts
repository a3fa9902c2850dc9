/**
 * `auth` on a new bidi stream: every stream the client opens to a broker starts with it (the
 * publish stream, the request stream, a subscription's or a poll's control stream). Answers the
 * stream, its frame reader and what the broker granted on it.
 */
import { type Connection, StreamLimitError, type TransportStream } from '@felix/transport';
import { authCapabilityFields, decodeMessage, encodeMessage } from '@felix/wire';
import {
  AbortedError,
  ProtocolError,
  StreamLimitExceededError,
  TimeoutError,
  brokerError,
} from '../errors.js';
import type { TlsOptions } from '../types.js';
import { FrameStream } from './frame-stream.js';
import {
  CLIENT_FEATURES_HI,
  CLIENT_FEATURES_SENT,
  CLIENT_FLAGS,
  type Negotiated,
  negotiateAnswer,
} from './negotiation.js';

export interface ConnectionOptions {
  tenant: string;
  /** The newest token: a refresh replaces it (BrokerConnection.reauth), and every stream opened
   *  afterwards authenticates with it. */
  token: string;
  namespace: string;
  tls: TlsOptions;
  connectTimeoutMs: number;
  /** Declare the broker dead after this long without hearing from it. */
  idleTimeoutMs: number;
  /** How long a subscription or watch waits for its event stream after the broker's answer
   *  (EVENT_STREAM_WAIT_MS_MAX when absent). */
  eventStreamWaitMs?: number;
  /** How long a stream opened on the live connection waits for its `auth_ok`, a subscription or
   *  watch for its opening's answer, and a request stream for its oldest answer (a poll's: past
   *  its wait) (REQUEST_TIMEOUT_MS_DEFAULT when absent). */
  requestTimeoutMs?: number;
}

export interface AuthedStream {
  stream: TransportStream;
  frames: FrameStream;
  negotiated: Negotiated;
}

export async function authStream(
  conn: Connection,
  opts: ConnectionOptions,
  /** The layouts offered on this stream (a subscription may add the timestamped events). */
  flags: number = CLIENT_FLAGS,
  features: number = CLIENT_FEATURES_SENT,
  /** Ends the wait for `auth_ok` (a stalled broker answers none) with AbortedError. */
  signal?: AbortSignal,
): Promise<AuthedStream> {
  const stream = await conn.openBidi().catch((err: unknown) => {
    // The transport's refusal names no server and reads as a transport fault; to the caller it
    // is a bound of this connection, which stays up.
    if (!(err instanceof StreamLimitError)) throw err;
    throw new StreamLimitExceededError(`${conn.transport}://${conn.remote}`, err.limit, {
      cause: err,
    });
  });
  const unlink = resetOnAbort(stream, signal);
  try {
    return await authenticate(stream, opts, flags, features);
  } catch (err) {
    stream.reset(0); // a stream that did not authenticate serves nothing: free its slot
    if (signal?.aborted) throw new AbortedError('opening a stream', { cause: signal.reason });
    throw err;
  } finally {
    unlink();
  }
}

/**
 * Resets `stream` once `signal` aborts, which ends a read or a write waiting on it (a stalled
 * broker would otherwise hold it until the connection's silence check); the answer takes the
 * listener off. No signal: nothing.
 */
export function resetOnAbort(stream: TransportStream, signal: AbortSignal | undefined): () => void {
  if (signal === undefined) return () => undefined;
  const onAbort = () => stream.reset(0);
  if (signal.aborted) {
    onAbort();
    return () => undefined;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

async function authenticate(
  stream: TransportStream,
  opts: ConnectionOptions,
  flags: number,
  features: number,
): Promise<AuthedStream> {
  const frames = new FrameStream(stream);
  // What this stream offers; @felix/wire writes it on `auth` and negotiates the answer.
  const offered = { flags, features, featuresHi: CLIENT_FEATURES_HI };
  await stream.write(
    encodeMessage({
      type: 'auth',
      tenant_id: opts.tenant,
      token: opts.token,
      ...authCapabilityFields(offered),
    }),
  );
  const frame = await frames.next();
  if (!frame) throw new ProtocolError('the broker closed the stream during auth');
  const msg = decodeMessage(frame.payload);
  if (msg.type === 'auth_ok' || msg.type === 'ok') {
    return { stream, frames, negotiated: negotiateAnswer(msg, flags, features) };
  }
  if (msg.type === 'error') {
    // Typed by its code: a refused token is UnauthenticatedError (never retried), but a broker
    // draining on SIGTERM refuses the auth `draining`, which another broker or a reconnect serves.
    throw brokerError({
      brokerCode: msg.code ?? 'unauthenticated',
      message: msg.message,
      retry: msg.retry,
      detail: msg.detail,
    });
  }
  throw new ProtocolError(`expected auth_ok, got ${msg.type}`);
}

/** `p`, or a TimeoutError (of class `retry` unless told) once `ms` pass. */
export async function withTimeout<T>(
  p: Promise<T>,
  ms: number,
  what: string,
  retry: 'retry' | 'unknown_outcome' = 'retry',
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TimeoutError(what, ms, retry)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
