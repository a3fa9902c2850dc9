import { AbstractEvent } from '@matrixai/events';
class EventQUIC extends AbstractEvent {
}
// Socket events
class EventQUICSocket extends EventQUIC {
}
class EventQUICSocketStart extends EventQUICSocket {
}
class EventQUICSocketStarted extends EventQUICSocket {
}
class EventQUICSocketStop extends EventQUICSocket {
}
class EventQUICSocketStopped extends EventQUICSocket {
}
class EventQUICSocketError extends EventQUICSocket {
}
class EventQUICSocketClose extends EventQUICSocket {
}
// Client events
class EventQUICClient extends EventQUIC {
}
class EventQUICClientDestroy extends EventQUICClient {
}
class EventQUICClientDestroyed extends EventQUICClient {
}
/**
 * All `EventQUICConnectionError` errors is also `EventQUICClient` errors.
 * This is because `QUICClient` is 1 to 1 to `QUICConnection`.
 * It's thin wrapper around it.
 */
class EventQUICClientError extends EventQUICClient {
}
class EventQUICClientErrorSend extends EventQUICSocket {
}
class EventQUICClientClose extends EventQUICClient {
}
// Server events
class EventQUICServer extends EventQUIC {
}
class EventQUICServerConnection extends EventQUICServer {
}
class EventQUICServerStart extends EventQUICServer {
}
class EventQUICServerStarted extends EventQUICServer {
}
class EventQUICServerStop extends EventQUICServer {
}
class EventQUICServerStopped extends EventQUICServer {
}
class EventQUICServerError extends EventQUICServer {
}
class EventQUICServerClose extends EventQUICServer {
}
// Connection events
class EventQUICConnection extends EventQUIC {
}
class EventQUICConnectionStart extends EventQUICConnection {
}
class EventQUICConnectionStarted extends EventQUICConnection {
}
class EventQUICConnectionStop extends EventQUICConnection {
}
class EventQUICConnectionStopped extends EventQUICConnection {
}
/**
 * Closing a quic connection is always an error no matter if it is graceful or
 * not. This is due to the utilisation of the error code and reason during
 * connection close. Additionally, it is also possible that the QUIC
 * connection times out. In this case, quiche does will not send a
 * `CONNECTION_CLOSE` frame.
 */
class EventQUICConnectionError extends EventQUICConnection {
}
class EventQUICConnectionClose extends EventQUICConnection {
}
class EventQUICConnectionStream extends EventQUICConnection {
}
class EventQUICConnectionSend extends EventQUICConnection {
}
// Stream events
class EventQUICStream extends EventQUIC {
}
class EventQUICStreamDestroy extends EventQUICStream {
}
class EventQUICStreamDestroyed extends EventQUICStream {
}
/**
 * Gracefully closing a QUIC stream does not require an error event.
 */
class EventQUICStreamError extends EventQUICStream {
}
/**
 * QUIC stream readable side is closed.
 *
 * `ErrorQUICStreamLocalRead` - readable side cancelled locally with code.
 * `ErrorQUICStreamPeerRead` - readable side cancelled by peer aborting the
 *                             remote writable side.
 * `undefined` - readable side closed gracefully.
 */
class EventQUICStreamCloseRead extends EventQUICStream {
}
/**
 * QUIC stream writable side is closed.
 *
 * `ErrorQUICStreamLocalWrite` - writable side aborted locally with code.
 * `ErrorQUICStreamPeerWrite` - writable side aborted by peer cancelling the
 *                             remote readable side.
 * `undefined` - writable side closed gracefully.
 */
class EventQUICStreamCloseWrite extends EventQUICStream {
}
class EventQUICStreamSend extends EventQUICStream {
}
export { EventQUIC, EventQUICSocket, EventQUICSocketStart, EventQUICSocketStarted, EventQUICSocketStop, EventQUICSocketStopped, EventQUICSocketError, EventQUICSocketClose, EventQUICClient, EventQUICClientDestroy, EventQUICClientDestroyed, EventQUICClientError, EventQUICClientErrorSend, EventQUICClientClose, EventQUICServer, EventQUICServerStart, EventQUICServerStarted, EventQUICServerStop, EventQUICServerStopped, EventQUICServerError, EventQUICServerClose, EventQUICServerConnection, EventQUICConnection, EventQUICConnectionStart, EventQUICConnectionStarted, EventQUICConnectionStop, EventQUICConnectionStopped, EventQUICConnectionError, EventQUICConnectionClose, EventQUICConnectionStream, EventQUICConnectionSend, EventQUICStream, EventQUICStreamDestroy, EventQUICStreamDestroyed, EventQUICStreamError, EventQUICStreamCloseRead, EventQUICStreamCloseWrite, EventQUICStreamSend, };
//# sourceMappingURL=events.js.map