var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import Logger from '@matrixai/logger';
import { Timer } from '@matrixai/timer';
import { Lock } from '@matrixai/async-locks';
import { AbstractEvent, EventAll } from '@matrixai/events';
import { startStop } from '@matrixai/async-init';
import { decorators } from '@matrixai/contexts';
import { buildQuicheConfig, minIdleTimeout } from './config.js';
import QUICConnectionId from './QUICConnectionId.js';
import QUICStream from './QUICStream.js';
import { ConnectionErrorCode } from './native/types.js';
import quiche from './native/quiche.js';
import { Shutdown } from './native/types.js';
import * as utils from './utils.js';
import * as events from './events.js';
import * as errors from './errors.js';
/** [felix patch 15] Up to this many streams, `processReadable` probes them one by one. */
const readableProbeStreamsMax = 64;
/** [felix patch 16] The writable() generator still runs once in this many turns. */
const writableFullWalkTurns = 64;
/**
 * [felix patch 19] QUIC's smallest datagram size (RFC 9000 §14): quiche fills a packet to at
 * least this whenever it has more to send, so a shorter datagram was all it had.
 */
const shortDatagramBytes = 1200;
let QUICConnection = class QUICConnection {
    /**
     * This determines when it is a client or server connection.
     */
    type;
    /**
     * Resolves once the connection has closed.
     */
    closedP;
    /**
     * Internal native connection object.
     * @internal
     */
    conn;
    /**
     * Internal stream map.
     * @internal
     */
    streamMap = new Map();
    /**
     * Unique id used to identify events intended for this connection.
     */
    sendId;
    logger;
    socket;
    config;
    reasonToCode;
    codeToReason;
    /**
     * This ensures that `recv` is serialised.
     * Prevents a new `recv` call intercepting the previous `recv` call that is
     * still finishing up with a `send` call.
     */
    // [felix patch 1] `recv` is synchronous now, so it needs no Lock (the Lock built a Timer,
    // an AbortController and an Error on every acquisition).
    /** [felix patch 2] A send is scheduled once per event-loop turn. */
    sendScheduled = false;
    /** [felix patch 3] One plain timer for quiche's timeout, re-armed only when it must move. */
    connTimer = null;
    connTimerDeadline = Infinity;
    /** [felix patch 18] A datagram arrived since the verified flush last asked `peerError`. */
    peerErrorUnchecked = true;
    /** [felix patch 17] The RecvInfo `recv` hands quiche, kept while the peer's address holds. */
    recvInfo = null;
    /**
     * [felix patch 22] The datagram `recv` is processing, once quiche has taken it: nothing
     * reads it again (quiche copies what it keeps, dgram lets go of it after the event), so the
     * first direct stream read of this datagram takes its bytes into it instead of copying them
     * out of the shared scratch into a new buffer (`QUICStream.recvDirect`). Null outside recv.
     */
    recvSpare = null;
    /** [felix patch 5] Set by `forceDestroy`: no further I/O of any kind. */
    forceDestroyed = false;
    // [felix patch 6] [felix patch 8] The send slab is kept across flushes on the socket
    // (`socket.sendSlab`), shared by every connection on it.
    /** [felix patch 2] Called with socket send errors (set by QUICClient/QUICServer). */
    sendErrorHandler = null;
    /**
     * Client initiated bidirectional stream starts at 0.
     * Increment by 4 to get the next ID.
     */
    streamIdClientBidi = 0b00;
    /**
     * Server initiated bidirectional stream starts at 1.
     * Increment by 4 to get the next ID.
     */
    streamIdServerBidi = 0b01;
    /**
     * Client initiated unidirectional stream starts at 2.
     * Increment by 4 to get the next ID.
     */
    streamIdClientUni = 0b10;
    /**
     * Server initiated unidirectional stream starts at 3.
     * Increment by 4 to get the next ID.
     */
    streamIdServerUni = 0b11;
    /**
     * Tracks the highest StreamId that has a created QUICStream for clientBidi
     */
    streamIdUsedClientBidi = (0b00 - 4);
    /**
     * Tracks the highest StreamId that has a created QUICStream for serverBidi
     */
    streamIdUsedServerBidi = (0b01 - 4);
    /**
     * Tracks the highest StreamId that has a created QUICStream for clientUni
     */
    streamIdUsedClientUni = (0b10 - 4);
    /**
     * Tracks the highest StreamId that has a created QUICStream for clientUni
     */
    streamIdUsedServerUni = (0b11 - 4);
    /**
     * Tracks used ids that have skipped the expected next id for the streamIdUsed counters.
     * If the next id in the streamIdUsed sequence is used then we remove IDs from the Set
     * up to the next ID gap.
     */
    streamIdUsedSet = new Set();
    /**
     * Quiche connection timer. This performs time delayed state transitions.
     */
    connTimeoutTimer;
    /**
     * Keep alive timer.
     *
     * Quiche does not natively ensure activity on the connection. This interval
     * timer guarantees that there will be activity on the connection by sending
     * acknowledgement eliciting frames, which will cause the peer to acknowledge.
     *
     * This is still useful even if the `config.maxIdleTimeout` is set to 0, which
     * means the connection will never time out due to being idle.
     *
     * This mechanism will only start working after `secureEstablishedP`.
     */
    keepAliveIntervalTimer;
    /**
     * Remote host which can change on every `QUICConnection.recv`.
     */
    _remoteHost;
    /**
     * Remote port which can change on every `QUICConnection.recv`.
     */
    _remotePort;
    /**
     * Chain of local certificates from leaf to root in DER format.
     */
    certDERs = [];
    /**
     * Array of independent CA certificates in DER format.
     */
    caDERs = [];
    /**
     * Secure connection establishment means that this connection has completed
     * peer certificate verification, and the connection is ready to be used.
     */
    secureEstablished = false;
    /**
     * Resolves after connection is established and peer certs have been verified.
     */
    secureEstablishedP;
    resolveSecureEstablishedP;
    rejectSecureEstablishedP;
    resolveClosedP;
    /**
     * Stores the last dispatched error. If no error, it will be `null`.
     *
     * `QUICConnection.stop` will need this if it is called by the user concurrent
     * with handling `EventQUICConnectionError`. It ensures that `this.stop` uses
     * the original error when force destroying the streams.
     */
    errorLast = null;
    /**
     * Handle `EventQUICConnectionError`.
     *
     * QUIC connections always close with errors. Graceful errors are logged out
     * at INFO level, while non-graceful errors are logged out at ERROR level.
     *
     * Internal errors will be thrown upwards to become an uncaught exception.
     *
     * @throws {errors.ErrorQUICConnectionInternal}
     */
    handleEventQUICConnectionError = (evt) => {
        const error = evt.detail;
        this.errorLast = error;
        // Log out error for debugging
        this.logger.info(utils.formatError(error));
        if (error instanceof errors.ErrorQUICConnectionInternal) {
            throw error;
        }
        this.dispatchEvent(new events.EventQUICConnectionClose({
            detail: error,
        }));
    };
    /**
     * Handles `EventQUICConnectionClose`.
     * Registered once.
     *
     * This event means that `this.conn.close()` is already called.
     * It does not mean that `this.closedP` is resolved. The resolving of
     * `this.closedP` depends on the `this.connTimeoutTimer`.
     */
    handleEventQUICConnectionClose = async (evt) => {
        const error = evt.detail;
        // Reject the secure established promise
        // This will allow `this.start()` to reject with the error.
        // No effect if this connection is running.
        if (!this.secureEstablished) {
            this.rejectSecureEstablishedP(error);
        }
        // Complete the final send call if it was a local close
        if (error instanceof errors.ErrorQUICConnectionLocal) {
            await this.send();
        }
        // If the connection is still running, we will force close the connection
        if (this[startStop.running] && this[startStop.status] !== 'stopping') {
            // The `stop` will need to retrieve the error from `this.errorLast`
            await this.stop({
                force: true,
            });
        }
    };
    /**
     * Handles all `EventQUICStream` events.
     */
    handleEventQUICStream = (evt) => {
        if (evt.detail instanceof AbstractEvent &&
            // Avoid cloning the `EventQUICStreamSend` event as it's very low level
            !(evt.detail instanceof events.EventQUICStreamSend)) {
            this.dispatchEvent(evt.detail.clone());
        }
    };
    /**
     * Handles `EventQUICStreamSend`.
     *
     * This handler will trigger `this.send` when there is data in the writable
     * stream buffer. As this is asynchronous, it is necessary to check if this
     * `QUICConnection` is still running.
     */
    handleEventQUICStreamSend = () => {
        // [felix patch 2] coalesce: one send per event-loop turn
        this.scheduleSend();
    };
    /**
     * [felix patch 2] Schedules one `send` after the current turn's I/O callbacks, so every
     * datagram received and every stream write of a turn share one flush (and one ACK).
     */
    scheduleSend() {
        if (this.sendScheduled || this.forceDestroyed)
            return;
        this.sendScheduled = true;
        setImmediate(this.runScheduledSend);
    }
    /** [felix patch 11] A recv left the writable walk to the turn's flush. */
    writablePending = false;
    /** [felix patch 16] Turns since the last full writable walk. */
    writableProbeTurns = 0;
    /**
     * [felix patch 16] `write()` for every stream whose send side is open, asking quiche with
     * `streamCapacity` first: it wakes a writer waiting for capacity and finds a stream the
     * peer stopped. An unexpected answer leaves the stream to the full walk, next turn.
     */
    probeWritable() {
        let shutdown = false;
        for (const quicStream of this.streamMap.values()) {
            if (quicStream._writeClosed || (quicStream.type === 'uni' && quicStream.initiated === 'peer'))
                continue;
            try {
                this.conn.streamCapacity(quicStream.streamId);
            }
            catch (e) {
                if (utils.isStreamStopped(e) !== false) {
                    if (quicStream.write() === true)
                        shutdown = true;
                }
                else
                    this.writableProbeTurns = writableFullWalkTurns; // quiche's own walk decides
                continue;
            }
            quicStream.resolveWritableP?.();
        }
        return shutdown;
    }
    /** [felix patch 9] Streams that arrived during start(), once the connection runs. */
    streamsDeferred = false;
    processDeferredStreams = () => {
        this.streamsDeferred = false;
        if (this.forceDestroyed ||
            !this[startStop.running] ||
            this[startStop.status] === 'stopping' ||
            this.conn.isClosed())
            return;
        this.processStreams();
        this.scheduleSend();
    };
    /** [felix patch 10] The IP literal a client dialled, when it verifies the peer natively. */
    verifyIp = null;
    /**
     * [felix patch 10] Matches `verifyIp` against the peer certificate's IP address SANs, as
     * Node's tls does; on a mismatch, closes with the TLS alert bad_certificate (42) and
     * reports a local TLS error, as a failed native verification does.
     */
    verifyPeerIp() {
        if (this.verifyIp == null)
            return true;
        // Refused already: later datagrams of the closing connection are not checked again.
        if (this.conn.isDraining() || this.conn.isClosed())
            return false;
        const leaf = this.conn.peerCertChain()?.[0];
        let matched = false;
        try {
            matched = leaf != null && new X509Certificate(leaf).checkIP(this.verifyIp) != null;
        }
        catch {
            matched = false; // an unparsable certificate matches nothing
        }
        if (matched)
            return true;
        this.conn.close(false, quiche.CRYPTO_ERROR_START + 42, Buffer.from(''));
        const e_ = new errors.ErrorQUICConnectionLocalTLS(`Peer certificate is not valid for IP address ${this.verifyIp}`, { data: this.conn.localError() });
        this.dispatchEvent(new events.EventQUICConnectionError({ detail: e_ }));
        this.scheduleSend();
        return false;
    }
    runScheduledSend = () => {
        this.sendScheduled = false;
        this.sendNow();
    };
    /**
     * [felix patch 7] Flushes at once rather than at the end of the turn: quiche's send loop
     * runs synchronously in this call. Used by `QUICStream.writableClose`, whose FIN must be on
     * the wire before any ACK is processed (see there).
     */
    sendNow() {
        if (this.forceDestroyed)
            return;
        const s = this[startStop.status];
        if (!this[startStop.running] && s !== 'starting' && s !== 'stopping')
            return;
        // [felix patch 13] Verified peer: nothing in `send` awaits, so no promise per flush.
        if (this.secureEstablished) {
            try {
                // [felix patch 19] A running connection's flush may stop at a short datagram.
                this.flushSync(s === null);
                // [felix patch 18] Only a received datagram can carry the peer's close.
                if (this.peerErrorUnchecked) {
                    this.peerErrorUnchecked = false;
                    this.checkPeerError();
                }
            }
            catch (e) {
                // reported as EventQUICConnectionError by flushSync; logged as send() did
                if (!(e instanceof errors.ErrorQUICConnectionNotRunning))
                    this.logger.debug(utils.formatError(e));
            }
            return;
        }
        this.send().catch((e) => {
            if (!(e instanceof errors.ErrorQUICConnectionNotRunning))
                this.logger.debug(utils.formatError(e));
        });
    }
    /**
     * [felix patch 5] Ends the connection at once without further I/O: cancels both timers,
     * errors every stream, forgets the connection in the socket map and resolves `closedP`.
     * Used as the bounded close's forced path; it cannot spin because nothing is left to
     * schedule a send.
     */
    forceDestroy(reason = new errors.ErrorQUICConnectionStopping()) {
        if (this.forceDestroyed)
            return;
        this.forceDestroyed = true;
        this.stopKeepAliveIntervalTimer();
        if (this.connTimer != null)
            clearTimeout(this.connTimer);
        this.connTimer = null;
        for (const quicStream of this.streamMap.values()) {
            try { quicStream.readableController.error(reason); } catch { }
            quicStream.directReadError ??= reason; // [felix patch 12]
            try { quicStream.writableController.error(reason); } catch { }
            quicStream.rejectReadableP?.(reason);
            quicStream.rejectWritableP?.(reason);
            quicStream.resolveClosedP?.();
        }
        this.streamMap.clear();
        try { this.socket.connectionMap.delete(this.connectionId); } catch { }
        if (!this.secureEstablished)
            this.rejectSecureEstablishedP(reason);
        this.resolveClosedP();
    }
    /**
     * Handles `EventQUICStreamDestroyed`.
     * Registered once.
     */
    handleEventQUICStreamDestroyed = (evt) => {
        const quicStream = evt.target;
        quicStream.removeEventListener(events.EventQUICStreamSend.name, this.handleEventQUICStreamSend);
        quicStream.removeEventListener(EventAll.name, this.handleEventQUICStream);
        this.streamMap.delete(quicStream.streamId);
    };
    /**
     * Constructs a QUIC connection.
     *
     * @param opts
     * @param opts.type - client or server connection
     * @param opts.scid - source connection ID
     * @param opts.dcid - destination connection ID
     * @param opts.serverName - client connections can use server name for
     *                          verifying the server's certificate, however if
     *                          `config.verifyCallback` is set, this will have no
     *                          effect
     * @param opts.remoteInfo - remote host and port
     * @param opts.config - QUIC config
     * @param opts.socket - injected socket
     * @param opts.reasonToCode - maps stream error reasons to stream error codes
     * @param opts.codeToReason - maps stream error codes to reasons
     * @param opts.logger
     *
     * @throws {errors.ErrorQUICConnectionConfigInvalid}
     */
    constructor({ type, scid, dcid, serverName = null, remoteInfo, config, quicheConfig: sharedQuicheConfig, socket, reasonToCode = () => 0, codeToReason = (type, code) => new Error(`${type} ${code}`), logger, }) {
        this.logger = logger ?? new Logger(`${this.constructor.name} ${scid}`);
        this.sendId = scid.toString();
        if (config.keepAliveIntervalTime != null &&
            config.maxIdleTimeout !== 0 &&
            config.keepAliveIntervalTime >= config.maxIdleTimeout) {
            throw new errors.ErrorQUICConnectionConfigInvalid('`keepAliveIntervalTime` must be less than `maxIdleTimeout`');
        }
        // [felix patch 8] A server passes the quiche config it built once: building one per
        // connection parsed the key and certificate into a new BoringSSL SSL_CTX every time,
        // native memory freed only when the connection object was garbage collected.
        const quicheConfig = sharedQuicheConfig ?? buildQuicheConfig(config);
        let conn;
        if (type === 'client') {
            this.logger.info(`Connect ${this.constructor.name}`);
            // [felix patch 10] quiche gives its server name to BoringSSL as a DNS host name to
            // match (and as SNI). An IP literal never matches a certificate's IP address SANs
            // that way, so a server reached by address failed native verification. An address
            // is not sent and is matched against the IP SANs here once the chain has verified.
            if (serverName != null && isIP(serverName) !== 0) {
                if (config.verifyPeer && config.verifyCallback == null)
                    this.verifyIp = serverName;
                serverName = null;
            }
            conn = quiche.Connection.connect(serverName, scid, {
                host: socket.host,
                port: socket.port,
            }, {
                host: remoteInfo.host,
                port: remoteInfo.port,
            }, quicheConfig);
        }
        else if (type === 'server') {
            this.logger.info(`Accept ${this.constructor.name}`);
            conn = quiche.Connection.accept(scid, dcid, {
                host: socket.host,
                port: socket.port,
            }, {
                host: remoteInfo.host,
                port: remoteInfo.port,
            }, quicheConfig);
        }
        // This will output to the log keys file path
        if (config.logKeys != null) {
            conn.setKeylog(config.logKeys);
        }
        this.type = type;
        this.conn = conn;
        this.socket = socket;
        this.config = config;
        if (this.config.cert != null) {
            const certPEMs = utils.collectPEMs(this.config.cert);
            this.certDERs = certPEMs.map(utils.pemToDER);
        }
        if (this.config.ca != null) {
            const caPEMs = utils.collectPEMs(this.config.ca);
            this.caDERs = caPEMs.map(utils.pemToDER);
        }
        this.reasonToCode = reasonToCode;
        this.codeToReason = codeToReason;
        this._remoteHost = remoteInfo.host;
        this._remotePort = remoteInfo.port;
        const { p: secureEstablishedP, resolveP: resolveSecureEstablishedP, rejectP: rejectSecureEstablishedP, } = utils.promise();
        // Prevent promise rejection leak
        secureEstablishedP.catch(() => { });
        this.secureEstablishedP = secureEstablishedP;
        this.resolveSecureEstablishedP = () => {
            // This is an idempotent mutation
            this.secureEstablished = true;
            resolveSecureEstablishedP();
        };
        this.rejectSecureEstablishedP = rejectSecureEstablishedP;
        const { p: closedP, resolveP: resolveClosedP } = utils.promise();
        this.closedP = closedP;
        this.resolveClosedP = resolveClosedP;
    }
    /**
     * This is the source connection ID.
     */
    get connectionId() {
        const sourceId = this.conn.sourceId();
        // Zero copy construction of QUICConnectionId
        return new QUICConnectionId(sourceId.buffer, sourceId.byteOffset, sourceId.byteLength);
    }
    /**
     * This is the destination connection ID.
     * This is only fully known after establishing the connection
     */
    get connectionIdPeer() {
        const destinationId = this.conn.destinationId();
        // Zero copy construction of QUICConnectionId
        return new QUICConnectionId(destinationId.buffer, destinationId.byteOffset, destinationId.byteLength);
    }
    /**
     * A common ID between the client and server connection.
     * Used to identify connection pairs more easily.
     */
    get connectionIdShared() {
        const sourceId = this.conn.sourceId();
        const destinationId = this.conn.destinationId();
        if (Buffer.compare(sourceId, destinationId) <= 0) {
            return new QUICConnectionId(Buffer.concat([sourceId, destinationId]));
        }
        else {
            return new QUICConnectionId(Buffer.concat([destinationId, sourceId]));
        }
    }
    get remoteHost() {
        return this._remoteHost;
    }
    get remotePort() {
        return this._remotePort;
    }
    get localHost() {
        return this.socket.host;
    }
    get localPort() {
        return this.socket.port;
    }
    get closed() {
        return this.conn.isClosed();
    }
    async start({ data, remoteInfo, } = {}, ctx) {
        this.logger.info(`Start ${this.constructor.name}`);
        // If the connection has already been closed, we cannot start it again
        if (this.conn.isClosed()) {
            throw new errors.ErrorQUICConnectionClosed();
        }
        ctx.signal.throwIfAborted();
        const { p: abortP, rejectP: rejectAbortP } = utils.promise();
        // Prevent promise rejection leak
        void abortP.catch(() => { });
        const abortHandler = () => {
            rejectAbortP(ctx.signal.reason);
        };
        ctx.signal.addEventListener('abort', abortHandler);
        this.addEventListener(events.EventQUICConnectionError.name, this.handleEventQUICConnectionError);
        this.addEventListener(events.EventQUICConnectionClose.name, this.handleEventQUICConnectionClose, { once: true });
        if (this.type === 'client') {
            await this.send();
        }
        else if (this.type === 'server') {
            if (data == null || remoteInfo == null) {
                throw new errors.ErrorQUICConnectionStartData('Starting a server connection requires initial data and remote information');
            }
            await this.recv(data, remoteInfo);
        }
        try {
            // This will block until the connection is established
            await Promise.race([this.secureEstablishedP, abortP]);
        }
        catch (e) {
            if (ctx.signal.aborted) {
                // No `QUICStream` objects could have been created, however quiche stream
                // state should be cleaned up, and this can be done synchronously
                for (const streamId of this.conn.readable()) {
                    this.conn.streamShutdown(streamId, quiche.Shutdown.Read, this.reasonToCode('read', e));
                }
                for (const streamId of this.conn.writable()) {
                    this.conn.streamShutdown(streamId, quiche.Shutdown.Write, this.reasonToCode('write', e));
                }
                // According to RFC9000, closing while in the middle of a handshake
                // should use a transport error code `APPLICATION_ERROR`.
                // For this library we extend this "handshake" phase to include the
                // TLS handshake too.
                // This is also the behaviour of quiche when the connection is not
                // in a "safe" state to send application errors (where `app` parameter is true).
                // https://www.rfc-editor.org/rfc/rfc9000.html#section-10.2.3-3
                this.conn.close(false, ConnectionErrorCode.ApplicationError, Buffer.from(''));
                const localError = this.conn.localError();
                const e_ = new errors.ErrorQUICConnectionLocal('Failed to start QUIC connection due to start timeout', {
                    data: localError,
                    cause: e,
                });
                this.dispatchEvent(new events.EventQUICConnectionError({
                    detail: e_,
                }));
            }
            // Wait for the connection to be fully closed by the `this.connTimeoutTimer`
            await this.closedP;
            // Throws original exception
            throw e;
        }
        finally {
            ctx.signal.removeEventListener('abort', abortHandler);
        }
        if (this.config.keepAliveIntervalTime != null) {
            this.startKeepAliveIntervalTimer(this.config.keepAliveIntervalTime);
        }
        // [felix patch 9] Next turn: whoever awaited start() (the server's accept, the client's
        // caller) has then attached its stream listener.
        if (this.streamsDeferred)
            setImmediate(this.processDeferredStreams);
        this.logger.info(`Started ${this.constructor.name}`);
    }
    /**
     * Stops the QUIC connection.
     *
     * @param opts
     * @param opts.isApp - whether the destroy is initiated by the application
     * @param opts.errorCode - the error code to send to the peer, use
     *                         `ConnectionErrorCode` if `isApp` is false,
     *                         otherwise any unsigned integer is fine.
     * @param opts.reason - the reason to send to the peer
     * @param opts.force - force controls whether to cancel streams or wait for
     *                     streams to close gracefully
     *
     * The provided error parameters is only used if the quiche connection is not
     * draining or closed.
     */
    async stop({ isApp = true, errorCode = 0, reason = new Uint8Array(), force = true, } = {}) {
        this.logger.info(`Stop ${this.constructor.name}`);
        this.stopKeepAliveIntervalTimer();
        // Yield to allow any background processing to settle before proceeding.
        // This will allow any streams to process buffers before continuing
        await utils.yieldMicro();
        // Destroy all streams
        const streamsDestroyP = [];
        for (const quicStream of this.streamMap.values()) {
            // The reason is only used if `force` is `true`
            // If `force` is not true, this will gracefully wait for
            // both readable and writable to gracefully close
            streamsDestroyP.push(quicStream.destroy({
                reason: this.errorLast,
                force: force || this.conn.isDraining() || this.conn.isClosed(),
            }));
        }
        await Promise.all(streamsDestroyP);
        // Close after processing all streams
        if (!this.conn.isDraining() && !this.conn.isClosed()) {
            // If `this.conn.close` is already called, the connection will be draining,
            // in that case we just skip doing this local close.
            // If `this.conn.isTimedOut` is true, then the connection will be closed,
            // in that case we skip doing this local close.
            this.conn.close(isApp, errorCode, reason);
            const localError = this.conn.localError();
            const message = `Locally closed with ${localError.isApp ? 'application' : 'transport'} code ${localError.errorCode}`;
            const e = new errors.ErrorQUICConnectionLocal(message, {
                data: localError,
            });
            this.dispatchEvent(new events.EventQUICConnectionError({ detail: e }));
        }
        // Waiting for `closedP` to resolve
        // Only the `this.connTimeoutTimer` will resolve this promise
        await this.closedP;
        this.removeEventListener(events.EventQUICConnectionError.name, this.handleEventQUICConnectionError);
        this.removeEventListener(events.EventQUICConnectionClose.name, this.handleEventQUICConnectionClose);
        this.logger.info(`Stopped ${this.constructor.name}`);
    }
    /**
     * Get connection error.
     * This could be `undefined` if connection timed out.
     */
    getConnectionError() {
        return this.conn.localError() ?? this.conn.peerError() ?? undefined;
    }
    /**
     * Array of independent CA certificates in DER format.
     */
    getLocalCACertsChain() {
        return this.caDERs;
    }
    /**
     * Chain of local certificates from leaf to root in DER format.
     */
    getLocalCertsChain() {
        return this.certDERs;
    }
    /**
     * Chain of remote certificates from leaf to root in DER format.
     */
    getRemoteCertsChain() {
        return this.conn.peerCertChain() ?? [];
    }
    meta() {
        return {
            localHost: this.localHost,
            localPort: this.localPort,
            remoteHost: this.remoteHost,
            remotePort: this.remotePort,
            localCertsChain: this.certDERs,
            localCACertsChain: this.caDERs,
            remoteCertsChain: this.getRemoteCertsChain(),
        };
    }
    /**
     * Receives data from the socket for this connection.
     *
     * The data flows from the socket this connection to streams.
     * This takes data from the quiche connection and pushes to the
     * `QUICStream` collection.
     *
     * This function is callable during `this.start` and `this.stop`.
     * When the connection is draining, we can still receive data.
     * However, no streams are allowed to read or write data.
     *
     * @internal
     */
    // [felix patch 13] Synchronous (the body always was since patch 1): as an async function
    // its decorator and itself cost two promises per datagram.
    recv(data, remoteInfo) {
        // [felix patch 1] no Lock: the body below is synchronous, the send is scheduled.
        if (this.forceDestroyed)
            return;
        {
            // [felix patch 17] One RecvInfo per connection, rebuilt only when the peer's address
            // changes (quiche copies the addresses out of it on every call).
            let recvInfo = this.recvInfo;
            if (recvInfo === null ||
                recvInfo.from.port !== remoteInfo.port ||
                recvInfo.from.host !== remoteInfo.host) {
                recvInfo = this.recvInfo = {
                    to: {
                        host: this.localHost,
                        port: this.localPort,
                    },
                    from: {
                        host: remoteInfo.host,
                        port: remoteInfo.port,
                    },
                };
            }
            try {
                // This can process multiple QUIC packets.
                // Remember that 1 QUIC packet can have multiple QUIC frames.
                // Expect the `data` is mutated here due to in-place decryption,
                // so do not re-use the `data` afterward.
                this.conn.recv(data, recvInfo);
            }
            catch (e) {
                // If `config.verifyPeer` is true and `config.verifyCallback` is undefined,
                // then during the TLS handshake, a `TlsFail` exception will only be thrown
                // if the peer did not supply a certificate or that its certificate failed
                // the default certificate verification procedure.
                // If `config.verifyPeer` is true and `config.verifyCallback` is defined,
                // then during the TLS handshake, a `TlsFail` exception will only be thrown
                // if the peer did not supply a peer certificate.
                const localError = this.conn.localError();
                if (localError == null) {
                    // If there was no local error, then this is an internal error.
                    const e_ = new errors.ErrorQUICConnectionInternal('Failed connection recv due with unknown error', { cause: e });
                    this.dispatchEvent(new events.EventQUICConnectionError({ detail: e_ }));
                    throw e_;
                }
                else {
                    // Quiche connection recv will automatically close with local
                    // connection error and start draining.
                    // This is a legitimate state transition.
                    let e_;
                    if (e.message === 'TlsFail') {
                        e_ = new errors.ErrorQUICConnectionLocalTLS('Failed connection due to native TLS verification', {
                            cause: e,
                            data: localError,
                        });
                    }
                    else {
                        e_ = new errors.ErrorQUICConnectionLocal('Failed connection due to local error', {
                            cause: e,
                            data: localError,
                        });
                    }
                    this.dispatchEvent(new events.EventQUICConnectionError({ detail: e_ }));
                    return;
                }
            }
            this.peerErrorUnchecked = true; // [felix patch 18]
            // The remote information may be changed on each received packet.
            // If it changes, this would mean the connection has migrated.
            this._remoteHost = remoteInfo.host;
            this._remotePort = remoteInfo.port;
            // If `config.verifyCallback` is not defined, simply being established is
            // sufficient to mean we are securely established, however if it is defined
            // then secure establishment occurs only after custom TLS verification has
            // passed.
            if (!this.secureEstablished &&
                this.conn.isEstablished() &&
                this.config.verifyCallback == null) {
                if (!this.verifyPeerIp())
                    return;
                this.resolveSecureEstablishedP();
            }
            // If we are securely established we can process streams.
            if (this.secureEstablished) {
                // [felix patch 22] The datagram is spent: a stream read may keep its bytes in it.
                this.recvSpare = data;
                try {
                    // [felix patch 11] readers now (their replies join this turn's flush), the
                    // writable walk once per turn, at the end of the flush.
                    if (this[startStop.status] === 'starting')
                        this.processStreams();
                    else {
                        this.processReadable();
                        this.writablePending = true;
                    }
                }
                finally {
                    this.recvSpare = null;
                }
            }
            // [felix patch 2] After every recv there must be a send; one per turn is enough.
            this.scheduleSend();
        }
    }
    /**
     * Sends data to the socket from this connection.
     *
     * This takes the data from the quiche connection that is on the send buffer.
     * The data flows from the streams to this connection to the socket.
     *
     * - Call this if connecting to a server.
     * - Call this if `recv` is called.
     * - Call this if `connTimeoutTimer` ticks.
     * - Call this if stream is written.
     * - Call this if stream is read.
     *
     * This function is callable during `this.start` and `this.stop`.
     * When the connection is draining, we can still receive data.
     * However, no streams are allowed to read or write data.
     *
     * @internal
     */
    async send() {
        if (this.forceDestroyed)
            return;
        this.flushSync();
        if (!this.secureEstablished &&
            !this.conn.isDraining() &&
            !this.conn.isClosed() &&
            this.conn.isEstablished() &&
            this.config.verifyPeer &&
            this.config.verifyCallback != null) {
            const peerCertsChain = this.conn.peerCertChain();
            // Custom TLS verification
            const cryptoError = await this.config.verifyCallback(peerCertsChain, this.caDERs);
            if (cryptoError != null) {
                // This simulates the crypto error that occurs natively
                this.conn.close(false, cryptoError, Buffer.from(''));
                const localError = this.conn.localError();
                const e_ = new errors.ErrorQUICConnectionLocalTLS('Failed connection due to custom TLS verification', {
                    data: localError,
                });
                this.dispatchEvent(new events.EventQUICConnectionError({
                    detail: e_,
                }));
                return;
            }
            // If this succeeds, then we have securely established, and we can
            // process all the streams, that would have originally occurred in
            // `this.recv`. This will only be run on the first time, we perform
            // the custom TLS verification
            this.resolveSecureEstablishedP();
            this.processStreams();
        }
        this.checkPeerError();
    }
    /**
     * [felix patch 13] The datagram part of `send`, synchronous. `sendNow` runs it and
     * `checkPeerError` without `send`'s promise once the peer is verified (the custom
     * verification is the only part of `send` that awaits).
     * @internal
     */
    flushSync(shortStops = false) {
        // [felix patch 2] Datagrams are cut from one slab per flush and handed straight to the
        // UDP socket (no Buffer, event or promise per packet). A flush is bounded; if quiche
        // still has packets, the rest goes out next turn, so a send loop can never spin.
        // [felix patch 19] With `shortStops` (a verified connection that is neither starting
        // nor stopping, flushed after a receive or a write), a datagram shorter than
        // `shortDatagramBytes` ends the flush: quiche fills a 1-RTT packet up to its datagram
        // size whenever it has more to send, so a short one means it had nothing left but what
        // congestion or flow control holds back, and asking again (a native call that returns
        // null) cost a fifth of a data `send`. The timer's flush (probe timeouts send two
        // probes, each may be short) and the handshake's (coalesced long headers) still ask
        // until quiche says done.
        if (this.forceDestroyed)
            return;
        const size = this.config.maxSendUdpPayloadSize;
        const slabBytes = Math.max(size * 4, 256 * 1024);
        // [felix patch 6] Reuse the slab across flushes: a fresh 256 KiB buffer per flush cost
        // an allocation (and, as external memory, extra GC) per round trip. Datagrams already
        // handed to the socket view regions before `used`, which are never written again.
        // [felix patch 8] The slab is the socket's, not this connection's.
        const socket = this.socket;
        let slab = socket.sendSlab;
        let used = socket.sendSlabUsed;
        let packets = 0;
        while (true) {
            if (packets >= 512) {
                this.scheduleSend();
                break;
            }
            if (slab === null || slab.length - used < size) {
                slab = Buffer.allocUnsafe(slabBytes);
                used = 0;
                socket.sendSlabHeld = false; // [felix patch 21]
            }
            const sendBuffer = slab.subarray(used, used + size);
            let result;
            try {
                result = this.conn.send(sendBuffer);
            }
            catch (e) {
                // Internal error if send failed
                const e_ = new errors.ErrorQUICConnectionInternal('Failed connection send with unknown internal error', { cause: e });
                this.dispatchEvent(new events.EventQUICConnectionError({ detail: e_ }));
                throw e_;
            }
            if (result === null)
                break;
            const sendLength = result[0];
            const to = result[1].to;
            const sent = this.socket.sendDatagram(sendBuffer.subarray(0, sendLength), to.port, to.host, this.sendErrorHandler);
            used += sendLength;
            // [felix patch 21] A datagram the kernel took in the call leaves its region free:
            // while no datagram cut from this slab is held, the next one starts at its front
            // again. Moving on through the slab allocated a new 256 KiB buffer every dozen
            // 16 KB datagrams: about 1.3 KB of external memory per KiB sent, which V8 counts
            // towards its next mark-compact.
            if (!sent)
                socket.sendSlabHeld = true;
            else if (!socket.sendSlabHeld)
                used = 0;
            socket.sendSlab = slab; // [felix patch 6] saved per datagram, so no exit path reuses a sent region
            socket.sendSlabUsed = used;
            packets++;
            if (shortStops && sendLength < shortDatagramBytes)
                break; // [felix patch 19]
        }
        // [felix patch 11] The writable walk a recv deferred: after the datagrams left. A
        // writer it wakes writes in a microtask and schedules the next flush itself; a stream
        // it finds stopped by the peer may have frames to send, hence the scheduled send.
        if (this.writablePending && this.secureEstablished && !this.conn.isClosed()) {
            if (this.processWritable())
                this.scheduleSend();
        }
        // Resets the `this.connTimeoutTimer` because quiche timeout becomes
        // non-null after the first send call is made, and subsequently, each
        // send call may end up resetting the quiche timeout value.
        this.setConnTimeoutTimer();
    }
    /** [felix patch 13] The end of `send`: report a close the peer sent. */
    checkPeerError() {
        if (this[startStop.status] !== 'stopping') {
            const peerError = this.conn.peerError();
            if (peerError != null) {
                const message = `Peer closed with ${peerError.isApp ? 'application' : 'transport'} code ${peerError.errorCode}`;
                if (peerError.errorCode >= quiche.CRYPTO_ERROR_START &&
                    peerError.errorCode <= quiche.CRYPTO_ERROR_STOP) {
                    this.dispatchEvent(new events.EventQUICConnectionError({
                        detail: new errors.ErrorQUICConnectionPeerTLS(message, {
                            data: peerError,
                        }),
                    }));
                }
                else {
                    this.dispatchEvent(new events.EventQUICConnectionError({
                        detail: new errors.ErrorQUICConnectionPeer(message, {
                            data: peerError,
                        }),
                    }));
                }
                return;
            }
        }
    }
    isStreamUsed(streamId) {
        let nextId;
        const type = 0b11 & streamId;
        switch (type) {
            case 0b00:
                nextId = this.streamIdUsedClientBidi + 4;
                if (streamId <= this.streamIdUsedClientBidi ||
                    this.streamIdUsedSet.has(streamId)) {
                    return true;
                }
                else if (streamId === nextId) {
                    // Increase counter and check set in loop.
                    do {
                        this.streamIdUsedClientBidi = nextId;
                        this.streamIdUsedSet.delete(nextId);
                        nextId += 4;
                    } while (this.streamIdUsedSet.has(nextId));
                    return false;
                }
                else {
                    this.streamIdUsedSet.add(streamId);
                    return false;
                }
            case 0b01:
                nextId = this.streamIdUsedServerBidi + 4;
                if (streamId <= this.streamIdUsedServerBidi ||
                    this.streamIdUsedSet.has(streamId)) {
                    return true;
                }
                else if (streamId === nextId) {
                    // Increase counter and check set in loop.
                    do {
                        this.streamIdUsedServerBidi = nextId;
                        this.streamIdUsedSet.delete(nextId);
                        nextId += 4;
                    } while (this.streamIdUsedSet.has(nextId));
                    return false;
                }
                else {
                    this.streamIdUsedSet.add(streamId);
                    return false;
                }
            case 0b10:
                nextId = this.streamIdUsedClientUni + 4;
                if (streamId <= this.streamIdUsedClientUni ||
                    this.streamIdUsedSet.has(streamId)) {
                    return true;
                }
                else if (streamId === nextId) {
                    // Increase counter and check set in loop.
                    do {
                        this.streamIdUsedClientUni = nextId;
                        this.streamIdUsedSet.delete(nextId);
                        nextId += 4;
                    } while (this.streamIdUsedSet.has(nextId));
                    return false;
                }
                else {
                    this.streamIdUsedSet.add(streamId);
                    return false;
                }
            case 0b11:
                nextId = this.streamIdUsedServerUni + 4;
                if (streamId <= this.streamIdUsedServerUni ||
                    this.streamIdUsedSet.has(streamId)) {
                    return true;
                }
                else if (streamId === nextId) {
                    // Increase counter and check set in loop.
                    do {
                        this.streamIdUsedServerUni = nextId;
                        this.streamIdUsedSet.delete(nextId);
                        nextId += 4;
                    } while (this.streamIdUsedSet.has(nextId));
                    return false;
                }
                else {
                    this.streamIdUsedSet.add(streamId);
                    return false;
                }
            default:
                utils.never('got an unexpected ID type');
        }
    }
    processStreams() {
        // [felix patch 9] A peer stream can arrive in the same datagram as the end of the
        // handshake (patch 2 coalesces a client's Finished with its first stream data), i.e.
        // while start() has not returned. Upstream then shut it down as if the connection were
        // stopping, and no listener for it was attached yet anyway. It is left in quiche and
        // taken once the connection runs (see start).
        if (this[startStop.status] === 'starting') {
            this.streamsDeferred = true;
            return;
        }
        this.processReadable();
        this.processWritable();
    }
    /**
     * [felix patch 11] `conn.readable()` and `conn.writable()` are napi generators: creating
     * one and walking it cost about 10 and 8 µs here even for a single stream, a fifth of a
     * round trip's CPU. `isReadable()` (one cheap call) skips the readable walk for datagrams
     * that carry no stream data (ACKs), and `recv` defers the writable walk to the end of the
     * turn's flush (`send`), after the datagrams left: once per turn, not once per datagram.
     */
    processReadable() {
        if (!this.conn.isReadable())
            return;
        // [felix patch 15] A connection with few streams asks quiche about each of them (about
        // 0.4 µs a call) instead of creating the readable() generator (about 10 µs). A direct
        // stream's read() takes its bytes out of quiche at once, so if quiche still has
        // readable data after that it is a new peer stream, a stream with more than a chunk
        // waiting or one nobody reads: then the full walk runs as before.
        if (this.streamMap.size <= readableProbeStreamsMax) {
            for (const quicStream of this.streamMap.values()) {
                if (quicStream.direct && this.conn.streamReadable(quicStream.streamId))
                    quicStream.read();
            }
            if (!this.conn.isReadable())
                return;
        }
        for (const streamId of this.conn.readable()) {
            let quicStream = this.streamMap.get(streamId);
            if (quicStream == null) {
                if (this[startStop.running] === false ||
                    this[startStop.status] === 'stopping') {
                    // We should reject new connections when stopping
                    this.conn.streamShutdown(streamId, Shutdown.Write, this.reasonToCode('write', errors.ErrorQUICConnectionStopping));
                    this.conn.streamShutdown(streamId, Shutdown.Read, this.reasonToCode('read', errors.ErrorQUICConnectionStopping));
                    continue;
                }
                if (this.isStreamUsed(streamId)) {
                    utils.never('We should never repeat streamIds when creating streams');
                }
                quicStream = QUICStream.createQUICStream({
                    initiated: 'peer',
                    streamId,
                    config: this.config,
                    connection: this,
                    codeToReason: this.codeToReason,
                    reasonToCode: this.reasonToCode,
                    logger: this.logger.getChild(`${QUICStream.name} ${streamId}`),
                });
                this.streamMap.set(quicStream.streamId, quicStream);
                quicStream.addEventListener(events.EventQUICStreamSend.name, this.handleEventQUICStreamSend);
                quicStream.addEventListener(events.EventQUICStreamDestroyed.name, this.handleEventQUICStreamDestroyed, { once: true });
                quicStream.addEventListener(EventAll.name, this.handleEventQUICStream);
                this.dispatchEvent(new events.EventQUICConnectionStream({ detail: quicStream }));
            }
            quicStream.read();
        }
    }
    /**
     * [felix patch 11] See `processReadable`. True when it shut a stream down (frames to send).
     */
    processWritable() {
        this.writablePending = false;
        // [felix patch 16] As `processReadable` does: a connection with few streams asks quiche
        // about each of them instead of creating the writable() generator. Only a peer stream
        // quiche knows from a STOP_SENDING or MAX_STREAM_DATA alone (no data, no reset) is
        // missed that way; the full walk, every `writableFullWalkTurns` turns, finds it.
        if (this.streamMap.size <= readableProbeStreamsMax &&
            ++this.writableProbeTurns < writableFullWalkTurns)
            return this.probeWritable();
        this.writableProbeTurns = 0;
        let shutdown = false;
        for (const streamId of this.conn.writable()) {
            let quicStream = this.streamMap.get(streamId);
            if (quicStream == null) {
                if (this[startStop.running] === false ||
                    this[startStop.status] === 'stopping') {
                    // We should reject new connections when stopping
                    this.conn.streamShutdown(streamId, Shutdown.Write, this.reasonToCode('write', errors.ErrorQUICConnectionStopping));
                    this.conn.streamShutdown(streamId, Shutdown.Read, this.reasonToCode('read', errors.ErrorQUICConnectionStopping));
                    shutdown = true;
                    continue;
                }
                if (this.isStreamUsed(streamId)) {
                    try {
                        this.conn.streamSend(streamId, new Uint8Array(), false);
                    }
                    catch (e) {
                        // Both `StreamStopped()` and `FinalSize` errors means that the stream has ended and we cleaned up state
                        if (utils.isStreamStopped(e) !== false)
                            continue;
                        if (e.message === 'FinalSize')
                            continue;
                        throw e;
                    }
                    utils.never('We never expect a duplicate stream to be readable');
                }
                quicStream = QUICStream.createQUICStream({
                    initiated: 'peer',
                    streamId,
                    config: this.config,
                    connection: this,
                    codeToReason: this.codeToReason,
                    reasonToCode: this.reasonToCode,
                    logger: this.logger.getChild(`${QUICStream.name} ${streamId}`),
                });
                this.streamMap.set(quicStream.streamId, quicStream);
                quicStream.addEventListener(events.EventQUICStreamSend.name, this.handleEventQUICStreamSend);
                quicStream.addEventListener(events.EventQUICStreamDestroyed.name, this.handleEventQUICStreamDestroyed, { once: true });
                quicStream.addEventListener(EventAll.name, this.handleEventQUICStream);
                this.dispatchEvent(new events.EventQUICConnectionStream({ detail: quicStream }));
                shutdown = true; // a new stream: let whatever its listener did go out
            }
            if (quicStream.write() === true)
                shutdown = true;
        }
        return shutdown;
    }
    /**
     * Sets up the connection timeout timer.
     *
     * This only gets called on the first `QUICConnection.send`.
     * It's the responsibility of this timer to resolve the `closedP`.
     */
    setConnTimeoutTimer() {
        // [felix patch 3] A plain setTimeout instead of a new Timer per send. It is moved only
        // when quiche wants to wake earlier; firing early is harmless (`onTimeout` is time aware
        // and the following `send` re-arms the timer).
        if (this.forceDestroyed)
            return;
        const timeout = this.conn.timeout();
        if (timeout == null) {
            if (this.connTimer != null)
                clearTimeout(this.connTimer);
            this.connTimer = null;
            this.connTimerDeadline = Infinity;
            if (this.conn.isClosed()) {
                this.resolveClosedP();
                if (this.conn.isTimedOut()) {
                    this.dispatchEvent(new events.EventQUICConnectionError({
                        detail: new errors.ErrorQUICConnectionIdleTimeout(),
                    }));
                }
            }
            return;
        }
        const deadline = performance.now() + timeout;
        if (this.connTimer != null && this.connTimerDeadline <= deadline + 1)
            return;
        if (this.connTimer != null)
            clearTimeout(this.connTimer);
        this.connTimerDeadline = deadline;
        // Plus 1 ms to compensate for clock desync with quiche
        this.connTimer = setTimeout(this.handleConnTimer, timeout + 1);
    }
    handleConnTimer = () => {
        this.connTimer = null;
        this.connTimerDeadline = Infinity;
        if (this.forceDestroyed)
            return;
        // [felix patch 14] The timer is moved only when quiche wants to wake earlier (patch 3),
        // so it often fires after quiche's deadline went later (an ACK cancelled the probe
        // timeout): then it is only re-armed, without onTimeout and a flush.
        const remaining = this.conn.timeout();
        if (remaining != null && remaining > 0) {
            this.setConnTimeoutTimer();
            return;
        }
        this.conn.onTimeout();
        if (this.conn.isClosed()) {
            this.resolveClosedP();
            if (this.conn.isTimedOut()) {
                this.dispatchEvent(new events.EventQUICConnectionError({
                    detail: new errors.ErrorQUICConnectionIdleTimeout(),
                }));
            }
            return;
        }
        this.send().catch((e) => {
            if (!(e instanceof errors.ErrorQUICConnectionNotRunning))
                this.logger.debug(utils.formatError(e));
        });
    };
    /**
     * Creates a new QUIC stream on the connection.
     */
    newStream(type = 'bidi') {
        let streamId;
        if (this.type === 'client' && type === 'bidi') {
            streamId = this.streamIdClientBidi;
        }
        else if (this.type === 'server' && type === 'bidi') {
            streamId = this.streamIdServerBidi;
        }
        else if (this.type === 'client' && type === 'uni') {
            streamId = this.streamIdClientUni;
        }
        else if (this.type === 'server' && type === 'uni') {
            streamId = this.streamIdServerUni;
        }
        if (this.isStreamUsed(streamId)) {
            utils.never('We should never repeat streamIds when creating streams');
        }
        const quicStream = QUICStream.createQUICStream({
            initiated: 'local',
            streamId: streamId,
            connection: this,
            config: this.config,
            codeToReason: this.codeToReason,
            reasonToCode: this.reasonToCode,
            logger: this.logger.getChild(`${QUICStream.name} ${streamId}`),
        });
        this.streamMap.set(quicStream.streamId, quicStream);
        quicStream.addEventListener(events.EventQUICStreamSend.name, this.handleEventQUICStreamSend);
        quicStream.addEventListener(events.EventQUICStreamDestroyed.name, this.handleEventQUICStreamDestroyed, { once: true });
        quicStream.addEventListener(EventAll.name, this.handleEventQUICStream);
        if (this.type === 'client' && type === 'bidi') {
            this.streamIdClientBidi = (this.streamIdClientBidi + 4);
        }
        else if (this.type === 'server' && type === 'bidi') {
            this.streamIdServerBidi = (this.streamIdServerBidi + 4);
        }
        else if (this.type === 'client' && type === 'uni') {
            this.streamIdClientUni = (this.streamIdClientUni + 4);
        }
        else if (this.type === 'server' && type === 'uni') {
            this.streamIdServerUni = (this.streamIdServerUni + 4);
        }
        return quicStream;
    }
    /**
     * Destroys all active streams without closing the connection.
     *
     * If there are no active streams then it will do nothing.
     * If the connection is stopped with `force: false` then this can be used
     * to force close any streams `stop` is waiting for to end.
     *
     * Destruction will occur in the background.
     */
    destroyStreams(reason) {
        for (const quicStream of this.streamMap.values()) {
            quicStream.cancel(reason);
        }
    }
    /**
     * Starts the keep alive interval timer.
     *
     * Interval time should be less than `maxIdleTimeout` unless it is `0`, which
     * means `Infinity`.
     *
     * If the `maxIdleTimeout` is `0`, this can still be useful to maintain
     * activity on the connection.
     */
    startKeepAliveIntervalTimer(ms) {
        const keepAliveHandler = async (signal) => {
            if (signal.aborted)
                return;
            // Intelligently schedule a PING frame.
            // If the connection has already sent ack-eliciting frames
            // then this is a noop.
            this.conn.sendAckEliciting();
            await this.send();
            if (signal.aborted)
                return;
            this.keepAliveIntervalTimer = new Timer({
                delay: ms,
                handler: keepAliveHandler,
                lazy: true,
            });
        };
        this.keepAliveIntervalTimer = new Timer({
            delay: ms,
            handler: keepAliveHandler,
            lazy: true,
        });
    }
    /**
     * Stops the keep alive interval timer
     */
    stopKeepAliveIntervalTimer() {
        this.keepAliveIntervalTimer?.cancel();
    }
};
__decorate([
    startStop.ready(new errors.ErrorQUICConnectionNotRunning())
], QUICConnection.prototype, "connectionIdPeer", null);
__decorate([
    startStop.ready(new errors.ErrorQUICConnectionNotRunning())
], QUICConnection.prototype, "connectionIdShared", null);
__decorate([
    decorators.timedCancellable(true, minIdleTimeout, errors.ErrorQUICConnectionStartTimeout),
    __param(1, decorators.context)
], QUICConnection.prototype, "start", null);
__decorate([
    startStop.ready(new errors.ErrorQUICConnectionNotRunning(), false, [
        'starting',
        'stopping',
    ])
], QUICConnection.prototype, "recv", null);
__decorate([
    startStop.ready(new errors.ErrorQUICConnectionNotRunning(), false, [
        'starting',
        'stopping',
    ])
], QUICConnection.prototype, "send", null);
__decorate([
    startStop.ready(new errors.ErrorQUICConnectionNotRunning())
], QUICConnection.prototype, "newStream", null);
QUICConnection = __decorate([
    startStop.StartStop({
        eventStart: events.EventQUICConnectionStart,
        eventStarted: events.EventQUICConnectionStarted,
        eventStop: events.EventQUICConnectionStop,
        eventStopped: events.EventQUICConnectionStopped,
    })
], QUICConnection);
export default QUICConnection;
//# sourceMappingURL=QUICConnection.js.map