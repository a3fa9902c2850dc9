var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
import { ReadableStream, WritableStream, CountQueuingStrategy, } from 'stream/web';
import Logger from '@matrixai/logger';
import { createDestroy, destroyed, status } from '@matrixai/async-init';
import quiche from './native/quiche.js';
import * as utils from './utils.js';
import * as events from './events.js';
import * as errors from './errors.js';
/** [felix patch 8] Read scratch buffers, one per chunk size, shared by every stream. */
const readScratches = new Map();
function readScratch(size) {
    let b = readScratches.get(size);
    if (b === undefined) {
        b = Buffer.allocUnsafe(size);
        readScratches.set(size, b);
    }
    return b;
}
const abortReadablePReason = Symbol('abort readableP reason');
let QUICStream = class QUICStream {
    /**
     * Creates a QUIC stream.
     *
     * This creation is synchronous as it avoids the need for concurrent locking
     * for generating new stream IDs.
     *
     * @param opts
     * @param opts.initiated - local or peer initiated stream
     * @param opts.streamId - stream ID
     * @param opts.connection - QUIC connection
     * @param opts.config - QUIC config
     * @param opts.reasonToCode - maps stream error reasons to stream error codes
     * @param opts.codeToReason - maps stream error codes to reasons
     * @param opts.logger
     *
     * The `reasonToCode` defaults to returning `0` as the code.
     * The `codeToReason` defaults to returning `Error` instance.
     */
    static createQUICStream({ initiated, streamId, connection, config, reasonToCode = () => 0, codeToReason = (type, code) => new Error(`${type.toString()} ${code.toString()}`), logger = new Logger(`${this.name} ${streamId}`), }) {
        logger.info(`Create ${this.name}`);
        const stream = new this({
            initiated,
            streamId,
            connection,
            config,
            reasonToCode,
            codeToReason,
            logger,
        });
        if (stream.type === 'uni') {
            if (initiated === 'local') {
                // Readable is automatically closed if it is local and unidirectional
                stream.readableController.close();
                stream._readClosed = true;
            }
            else if (initiated === 'peer') {
                // Writable is automatically closed if it is peer and unidirectional
                // This voids the promise, because the stream is a dummy stream
                // and there's no other way to close the writable stream
                // Ignores errors in case writable were to be aborted before it is closed
                void stream.writable.close().catch(() => { });
                stream._writeClosed = true;
            }
        }
        stream.addEventListener(events.EventQUICStreamError.name, stream.handleEventQUICStreamError);
        stream.addEventListener(events.EventQUICStreamCloseRead.name, stream.handleEventQUICStreamCloseRead, { once: true });
        stream.addEventListener(events.EventQUICStreamCloseWrite.name, stream.handleEventQUICStreamCloseWrite, { once: true });
        logger.info(`Created ${this.name}`);
        return stream;
    }
    type;
    initiated;
    streamId;
    readable;
    writable;
    closedP;
    logger;
    connection;
    reasonToCode;
    codeToReason;
    readableController;
    writableController;
    _readClosed = false;
    _writeClosed = false;
    readableChunk;
    resolveReadableP;
    rejectReadableP;
    resolveWritableP;
    rejectWritableP;
    resolveClosedP;
    /**
     * [felix patch 12] Direct I/O: the caller reads with `readDirect`/`waitReadable` and writes
     * with `writeDirect` instead of the WHATWG `readable`/`writable` (a round trip through them
     * cost about a dozen promises per chunk each way). Set before the first microtask after
     * creation, so the WHATWG readable never pulls from quiche.
     */
    direct = false;
    /**
     * [felix patch 12] One chunk read ahead for the direct reader when quiche reported data
     * and nobody waited: what the WHATWG readable's one-chunk queue did, so a stream whose
     * owner never reads still sees its FIN and closes.
     */
    directQueued = null;
    /** [felix patch 12] The direct reader has seen (or will see next) the end of the stream. */
    directEnded = false;
    /** [felix patch 12] Why the readable failed (a peer reset), thrown by `readDirect`. */
    directReadError = null;
    /**
     * Handles `EventQUICStreamError`.
     *
     * This event propagates all errors relating to locally cancelling or aborting
     * the readable or writable, or receiving a `RESET_STREAM` or `STOP_SENDING`
     * on the readable or writable respectively.
     *
     * Internal errors will be thrown upwards to become an uncaught exception.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    handleEventQUICStreamError = (evt) => {
        const error = evt.detail;
        if (error instanceof errors.ErrorQUICStreamInternal) {
            // Log out error for debugging
            this.logger.debug(utils.formatError(error));
            throw error;
        }
        if (error instanceof errors.ErrorQUICStreamLocalRead ||
            error instanceof errors.ErrorQUICStreamPeerRead) {
            this.dispatchEvent(new events.EventQUICStreamCloseRead({
                detail: error,
            }));
        }
        else if (error instanceof errors.ErrorQUICStreamLocalWrite ||
            error instanceof errors.ErrorQUICStreamPeerWrite) {
            this.dispatchEvent(new events.EventQUICStreamCloseWrite({
                detail: error,
            }));
        }
    };
    /**
     * Handles `EventQUICStreamCloseRead`.
     * Registered once.
     */
    handleEventQUICStreamCloseRead = async () => {
        this._readClosed = true;
        if (this._readClosed && this._writeClosed) {
            this.resolveClosedP();
            if (!this[destroyed] && this[status] !== 'destroying') {
                // By disabling force, we don't end up running cancel again
                await this.destroy({ force: false });
            }
        }
    };
    /**
     * Handles `EventQUICStreamCloseWrite`.
     * Registered once.
     */
    handleEventQUICStreamCloseWrite = async () => {
        this._writeClosed = true;
        if (this._readClosed && this._writeClosed) {
            this.resolveClosedP();
            if (!this[destroyed] && this[status] !== 'destroying') {
                // By disabling force, we don't end up running cancel again
                await this.destroy({ force: false });
            }
        }
    };
    constructor({ initiated, streamId, connection, config, reasonToCode, codeToReason, logger, }) {
        if (utils.isStreamBidirectional(streamId)) {
            this.type = 'bidi';
        }
        else if (utils.isStreamUnidirectional(streamId)) {
            this.type = 'uni';
        }
        this.logger = logger;
        this.initiated = initiated;
        this.streamId = streamId;
        this.connection = connection;
        this.reasonToCode = reasonToCode;
        this.codeToReason = codeToReason;
        const { p: closedP, resolveP: resolveClosedP } = utils.promise();
        this.closedP = closedP;
        this.resolveClosedP = resolveClosedP;
        // This will set up the readable chunk buffer with the size set to the
        // configured per-stream buffer size. Note that this doubles the memory
        // usage of each stream due to maintaining both the Rust and JS buffers
        if (this.type === 'uni' && initiated === 'local') {
            // We expect the readable stream to be closed
            this.readableChunk = undefined;
        }
        else {
            // [felix patch 8] `streamRecv` fills this synchronously and the bytes are copied out
            // before anything else runs, so every stream can share one scratch of this size
            // (one per stream cost its 64 KiB until the stream was garbage collected).
            this.readableChunk = readScratch(config.readableChunkSize);
        }
        if (this.type === 'uni' && initiated === 'local') {
            // This is just a dummy stream that will be auto-closed during creation
            this.readable = new ReadableStream({
                start: this.readableStart.bind(this),
            });
        }
        else {
            this.readable = new ReadableStream({
                start: this.readableStart.bind(this),
                pull: this.readablePull.bind(this),
                cancel: this.readableCancel.bind(this),
            }, 
            // Allow 1 buffered 'message', Buffering is handled via quiche
            new CountQueuingStrategy({
                highWaterMark: 1,
            }));
        }
        if (this.type === 'uni' && this.initiated === 'peer') {
            // This is just a dummy stream that will be auto-closed during creation
            this.writable = new WritableStream({
                start: this.writableStart.bind(this),
            });
        }
        else {
            this.writable = new WritableStream({
                start: this.writableStart.bind(this),
                write: this.writableWrite.bind(this),
                close: this.writableClose.bind(this),
                abort: this.writableAbort.bind(this),
            }, {
                // Allow 1 buffered 'message', Buffering is handled via quiche
                highWaterMark: 1,
            });
            // Initialise local state only when it is not uni-directional and peer initiated
            try {
                // Quiche stream state doesn't yet exist until data is either received
                // or sent on the stream. However in this QUIC library, one may want to
                // create a new stream to use. Therefore, in order to maintain consistent
                // closing behaviour, we can prime the stream state in quiche by sending
                // a 0-length message. The data is not actually send to the peer.
                connection.conn.streamSend(streamId, new Uint8Array(0), false);
            }
            catch (e) {
                // If the peer initially sent `RESET_STREAM`, and we constructed the
                // `QUICStream`, then we cannot create local quiche stream state.
                // We would get the `StreamStopped` exception here. If so, we can
                // ignore.
                if (utils.isStreamStopped(e) === false) {
                    if (e.message === 'StreamLimit') {
                        const limit = this.type === 'bidi'
                            ? config.initialMaxStreamsBidi
                            : config.initialMaxStreamsUni;
                        throw new errors.ErrorQUICStreamLimit(`Stream limit of ${limit} has been reached`, { cause: e });
                    }
                    throw new errors.ErrorQUICStreamInternal(`Failed to prime local stream state with a 0-length message: ${e.message}`, { cause: e });
                }
            }
        }
    }
    /**
     * Returns true of the writable has closed.
     */
    get writeClosed() {
        return this._writeClosed;
    }
    /**
     * Returns true if the readable has closed.
     */
    get readClosed() {
        return this._readClosed;
    }
    get meta() {
        return this.connection.meta();
    }
    get closed() {
        return this._readClosed && this._writeClosed;
    }
    /**
     * Destroy the QUIC stream.
     *
     * @param opts
     * @param opts.force - if true, this will cancel readable and abort writable.
     * @param opts.reason - the reason to send to the peer, and if readable and
     *                      writable is cancelled and aborted, then this will be
     *                      the readable and writable error.
     *
     * @throws {errors.ErrorQUICStreamInternal} - if cancel fails
     */
    async destroy({ force = true, reason, } = {}) {
        this.logger.info(`Destroy ${this.constructor.name}`);
        if (force && !(this._readClosed && this._writeClosed)) {
            this.cancel(reason);
        }
        // If force is false, this will wait for graceful close of both readable
        // and writable.
        await this.closedP;
        this.removeEventListener(events.EventQUICStreamError.name, this.handleEventQUICStreamError);
        this.removeEventListener(events.EventQUICStreamCloseRead.name, this.handleEventQUICStreamCloseRead);
        this.removeEventListener(events.EventQUICStreamCloseWrite.name, this.handleEventQUICStreamCloseWrite);
        this.logger.info(`Destroyed ${this.constructor.name}`);
    }
    /**
     * Cancels the readable and aborts the writable.
     *
     * If streams have already closed or cancelled then this will do nothing.
     * If the underlying quiche streams already closed then this will do nothing.
     *
     * Cancellation will occur in the background.
     *
     * @throws {errors.ErrorQUICStreamInternal} - if cancel fails
     */
    cancel(reason) {
        this.readableCancel(reason);
        this.writableAbort(reason);
    }
    /**
     * Called when stream is present in the `this.connection.conn.readable` iterator.
     *
     * If the quiche stream received `RESET_STREAM`, then this is processed as an
     * error, and will drop all buffered data. All other cases will be processed
     * gracefully.
     *
     * Note that this does not dispatch `EventQUICStreamSend` because
     * `QUICConnection` will process the connection send automatically, as the
     * origin of change here is from the `QUICConnection`.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     * @internal
     */
    read() {
        // [felix patch 18] quiche reports this stream readable: new bytes, a FIN or a reset.
        this.directDrained = false;
        // Stream is finished if due to `RESET_STREAM` or `fin` flag
        if (this.connection.conn.streamFinished(this.streamId)) {
            let result;
            try {
                result = this.connection.conn.streamRecv(this.streamId, this.readableChunk);
            }
            catch (e) {
                // If due to `RESET_STREAM` immediately cancel the readable and drop all buffers
                let code;
                if ((code = utils.isStreamReset(e)) !== false) {
                    const reason = this.codeToReason('read', code);
                    const e_ = new errors.ErrorQUICStreamPeerRead('Peer reset the readable stream', {
                        data: { code },
                        cause: reason,
                    });
                    // This is idempotent and won't error even if it is already stopped
                    this.readableController.error(reason);
                    this.directReadError = reason; // [felix patch 12]
                    // This rejects the readableP if it exists to release it from it's blocked state
                    this.rejectReadableP?.(reason);
                    this.dispatchEvent(new events.EventQUICStreamError({
                        detail: e_,
                    }));
                    return;
                }
                else {
                    const e_ = new errors.ErrorQUICStreamInternal('Failed `streamRecv` on the readable stream', { cause: e });
                    this.readableController.error(e_);
                    this.rejectReadableP?.(e_);
                    this.dispatchEvent(new events.EventQUICStreamError({
                        detail: e_,
                    }));
                    throw e_;
                }
            }
            if (result === null) {
                // This is an error, because this must be readable at this point
                const e = new errors.ErrorQUICStreamInternal('Failed `streamRecv` on the readable stream');
                this.readableController.error(e);
                this.rejectReadableP?.(e);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e,
                }));
                throw e;
            }
            // Close the readable gracefully
            const [recvLength] = result;
            if (this.direct) {
                // [felix patch 12] The direct reader takes these bytes, then the end.
                if (recvLength > 0) {
                    const tail = Buffer.from(this.readableChunk.subarray(0, recvLength));
                    this.directQueued = this.directQueued == null ? tail : Buffer.concat([this.directQueued, tail]);
                }
                this.directEnded = true;
                this.readableController.close();
                this.dispatchEvent(new events.EventQUICStreamCloseRead());
                this.wakeDirectReader();
                return;
            }
            if (recvLength > 0) {
                this.readableController.enqueue(
                // Making a copy to be enqueued
                Buffer.from(this.readableChunk.subarray(0, recvLength)));
            }
            this.readableController.close();
            this.dispatchEvent(new events.EventQUICStreamCloseRead());
            // Abort the `readablePull` since we have already processed the fin frame
            this.rejectReadableP?.(abortReadablePReason);
            return;
        }
        if (this.direct) {
            // [felix patch 12] Read one chunk ahead for the direct reader and wake it.
            // [felix patch 15] Taking the bytes now (not when the reader runs) leaves quiche
            // with no readable data on this stream, which `processReadable` relies on.
            if (this.directQueued == null && !this.directEnded && this.directReadError == null) {
                try {
                    const chunk = this.recvDirect();
                    if (chunk != null)
                        this.directQueued = chunk;
                }
                catch {
                    // recorded in directReadError and reported: the woken reader throws it
                }
            }
            this.wakeDirectReader();
            return;
        }
        // Resolve the read blocking promise if exists.
        // If already resolved, this is a noop
        this.resolveReadableP?.();
    }
    /**
     * Called when stream is present in the `this.connection.conn.writable` iterator.
     *
     * If the quiche stream received `STOP_SENDING`, then this is processed as an
     * error, and will drop all buffered data. All other cases will be processed
     * gracefully.
     *
     * Note that this does not dispatch `EventQUICStreamSend` because `QUICConnection` will
     * process the connection send automatically, as the origin of change here is from the
     * `QUICConnection`.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     * @internal
     */
    write() {
        // Stream is aborted if due to `STOP_SENDING`
        try {
            this.connection.conn.streamCapacity(this.streamId);
        }
        catch (e) {
            let code;
            if ((code = utils.isStreamStopped(e)) !== false) {
                // Cleanup the underlying quiche stream state, otherwise the stream
                // remains writable, and we end up re-creating a `QUICStream`.
                this.connection.conn.streamShutdown(this.streamId, quiche.Shutdown.Write, code);
                const reason = this.codeToReason('write', code);
                const e_ = new errors.ErrorQUICStreamPeerWrite('Peer stopped the writable stream', {
                    data: { code },
                    cause: reason,
                });
                this.writableController.error(reason);
                this.rejectWritableP?.(reason);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                return true; // [felix patch 11] shut down: the connection has frames to send
            }
            else {
                const e_ = new errors.ErrorQUICStreamInternal('Local stream writable could not `streamSend`', { cause: e });
                this.writableController.error(e_);
                this.rejectWritableP?.(e_);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                throw e_;
            }
        }
        // Resolve the write blocking promise if exists.
        // If already resolved, this is a noop
        this.resolveWritableP?.();
    }
    readableStart(controller) {
        this.readableController = controller;
    }
    writableStart(controller) {
        this.writableController = controller;
    }
    /** [felix patch 12] Switches this stream to direct I/O (see `direct`). */
    enableDirect() {
        this.direct = true;
    }
    /**
     * [felix patch 18] Set when a `streamRecv` returned less than a chunk (or nothing): quiche
     * holds no more of this stream until `read()` runs again, so `readDirect` answers `null`
     * without the native call (one per round trip: the reader's next read after its chunk).
     */
    directDrained = false;
    /**
     * [felix patch 12] The next bytes of the stream: a Buffer, `null` when none are ready yet
     * (await `waitReadable()`), or `undefined` at the end. Throws the reason of a peer reset.
     * Does what `readablePull` does, without the WHATWG readable in between.
     */
    readDirect() {
        if (this.directReadError != null)
            throw this.directReadError;
        if (this.directQueued != null) {
            const chunk = this.directQueued;
            this.directQueued = null;
            return chunk;
        }
        if (this.directEnded)
            return undefined;
        // [felix patch 18] quiche has nothing for this stream until a datagram brings more,
        // and `read()` (which every datagram with data for it reaches) clears the flag.
        if (this.directDrained)
            return null;
        return this.recvDirect();
    }
    /** [felix patch 12] True if a direct reader was waiting (it now runs in a microtask). */
    wakeDirectReader() {
        const wake = this.resolveReadableP;
        if (wake == null)
            return false;
        this.resolveReadableP = undefined;
        this.rejectReadableP = undefined;
        wake();
        return true;
    }
    /** [felix patch 12] One `streamRecv` for the direct reader (see `readDirect`). */
    recvDirect() {
        // [felix patch 22] Inside the connection's recv, the spent datagram (its own buffer,
        // of the size of the bytes it brought) takes the read; else the shared scratch does.
        const spare = this.connection.recvSpare;
        if (spare != null)
            this.connection.recvSpare = null;
        const into = spare ?? this.readableChunk;
        let result;
        try {
            result = this.connection.conn.streamRecv(this.streamId, into);
        }
        catch (e) {
            let code;
            if ((code = utils.isStreamReset(e)) !== false) {
                const reason = this.codeToReason('read', code);
                this.directReadError = reason;
                this.readableController.error(reason);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: new errors.ErrorQUICStreamPeerRead('Peer reset the readable stream', {
                        data: { code },
                        cause: reason,
                    }),
                }));
                throw reason;
            }
            const e_ = new errors.ErrorQUICStreamInternal('Failed `streamRecv` on the readable stream', { cause: e });
            this.directReadError = e_;
            this.readableController.error(e_);
            this.dispatchEvent(new events.EventQUICStreamError({ detail: e_ }));
            throw e_;
        }
        if (result === null) {
            this.directDrained = true; // [felix patch 18]
            return null;
        }
        const [recvLength, fin] = result;
        // [felix patch 18] Less than a full chunk: quiche handed over all it had.
        if (recvLength < into.length)
            this.directDrained = true;
        let out;
        // [felix patch 22] A view of the datagram when the bytes fill at least half of it (what
        // a reader keeps holds at most twice its bytes); else a copy of just the bytes.
        if (recvLength > 0 && spare != null && recvLength * 2 >= spare.length)
            out = spare.subarray(0, recvLength);
        else
            out = recvLength > 0 ? Buffer.from(into.subarray(0, recvLength)) : undefined;
        if (fin) {
            this.directEnded = true;
            this.readableController.close();
            this.dispatchEvent(new events.EventQUICStreamCloseRead());
        }
        // Reading opens the flow-control window: let the update go out.
        this.connection.scheduleSend();
        if (out === undefined && !fin)
            return null;
        return out;
    }
    /**
     * [felix patch 12] Resolves when quiche reports the stream readable (`read()`), rejects
     * when the readable is cancelled or the connection destroyed.
     */
    waitReadable() {
        const { p, resolveP, rejectP } = utils.promise();
        this.resolveReadableP = resolveP;
        this.rejectReadableP = rejectP;
        return p;
    }
    /**
     * [felix patch 12] `writableWrite` without the WHATWG writable: `undefined` when quiche took
     * all of `chunk` at once, else a promise that settles once it has. The caller serialises
     * its writes and ends the stream through the writable (`writableClose` sends the FIN).
     */
    writeDirect(chunk) {
        if (chunk.byteLength === 0)
            return undefined;
        const sent = this.streamSendDirect(chunk);
        if (sent >= chunk.byteLength)
            return undefined;
        return this.writeDirectRest(chunk.subarray(sent));
    }
    /** [felix patch 12] Bytes quiche took; throws (as `writableWrite` reports) on failure. */
    streamSendDirect(chunk) {
        let result;
        try {
            result = this.connection.conn.streamSend(this.streamId, chunk, false);
        }
        catch (e) {
            let code;
            if ((code = utils.isStreamStopped(e)) !== false) {
                const reason = this.codeToReason('write', code);
                this.writableController.error(reason);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: new errors.ErrorQUICStreamPeerWrite('Peer stopped the writable stream', {
                        data: { code },
                        cause: reason,
                    }),
                }));
                throw reason;
            }
            const e_ = new errors.ErrorQUICStreamInternal('Local stream writable could not `streamSend`', { cause: e });
            this.writableController.error(e_);
            this.dispatchEvent(new events.EventQUICStreamError({ detail: e_ }));
            throw e_;
        }
        this.connection.scheduleSend();
        return result ?? 0;
    }
    /** [felix patch 12] The rest of a direct write, as quiche's capacity frees up. */
    async writeDirectRest(chunk) {
        while (chunk.byteLength > 0) {
            const { p, resolveP, rejectP } = utils.promise();
            this.resolveWritableP = resolveP;
            this.rejectWritableP = rejectP;
            await p;
            chunk = chunk.subarray(this.streamSendDirect(chunk));
        }
    }
    /**
     * Serialised by `ReadableStream`.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    async readablePull() {
        // [felix patch 12] The direct reader owns the quiche stream.
        if (this.direct)
            return;
        // Block the pull if the quiche stream is not readable
        if (!this.connection.conn.streamReadable(this.streamId)) {
            const { p: readableP, resolveP: resolveReadableP, rejectP: rejectReadableP, } = utils.promise();
            // Prevent promise rejection leak
            void readableP.catch(() => { });
            this.resolveReadableP = resolveReadableP;
            this.rejectReadableP = rejectReadableP;
            try {
                await readableP;
            }
            catch (e) {
                // If readableP was rejected then we just want to end early here,
                // anything rejecting it should already have errored the stream.
                return;
            }
        }
        let result;
        try {
            result = this.connection.conn.streamRecv(this.streamId, this.readableChunk);
        }
        catch (e) {
            let code;
            if ((code = utils.isStreamReset(e)) !== false) {
                const reason = this.codeToReason('read', code);
                const e_ = new errors.ErrorQUICStreamPeerRead('Peer reset the readable stream', {
                    data: { code },
                    cause: reason,
                });
                this.readableController.error(reason);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                return;
            }
            else {
                const e_ = new errors.ErrorQUICStreamInternal('Failed `streamRecv` on the readable stream', { cause: e });
                this.readableController.error(e_);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                throw e_;
            }
        }
        if (result === null) {
            const e = new errors.ErrorQUICStreamInternal('Failed `streamRecv` on the readable stream because it is not readable');
            this.readableController.error(e);
            this.dispatchEvent(new events.EventQUICStreamError({
                detail: e,
            }));
            throw e;
        }
        const [recvLength, fin] = result;
        if (recvLength > 0) {
            this.readableController.enqueue(
            // Making a copy to be enqueued
            Buffer.from(this.readableChunk.subarray(0, recvLength)));
        }
        if (fin) {
            // Reader will receive `{ value: undefined, done: true }`
            this.readableController.close();
            // If fin is true, then that means, the stream is CLOSED
            this.dispatchEvent(new events.EventQUICStreamCloseRead());
        }
        this.connection.scheduleSend(); // [felix patch 2]
        return;
    }
    /**
     * Serialised with `this.writableClose` by `WritableStream`.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    async writableWrite(chunk) {
        if (chunk.byteLength === 0) {
            return;
        }
        let sentLength;
        while (true) {
            try {
                const result = this.connection.conn.streamSend(this.streamId, chunk, false);
                if (result === null) {
                    // This will trigger send, and also loop back to the top
                    sentLength = 0;
                }
                else {
                    sentLength = result;
                }
            }
            catch (e) {
                let code;
                if ((code = utils.isStreamStopped(e)) !== false) {
                    const reason = this.codeToReason('write', code);
                    const e_ = new errors.ErrorQUICStreamPeerWrite('Peer stopped the writable stream', {
                        data: { code },
                        cause: reason,
                    });
                    this.writableController.error(reason);
                    this.dispatchEvent(new events.EventQUICStreamError({
                        detail: e_,
                    }));
                    return;
                }
                else {
                    const e_ = new errors.ErrorQUICStreamInternal('Local stream writable could not `streamSend`', { cause: e });
                    this.writableController.error(e_);
                    this.dispatchEvent(new events.EventQUICStreamError({
                        detail: e_,
                    }));
                    throw e_;
                }
            }
            this.connection.scheduleSend(); // [felix patch 2]
            // If sent length is less than the chunk length, then blocker the writer.
            // The `this.writableP` will resolve when there's more capacity on the buffer.
            if (sentLength < chunk.byteLength) {
                chunk = chunk.subarray(sentLength, chunk.byteLength);
                const { p: writableP, resolveP: resolveWritableP, rejectP: rejectWritableP, } = utils.promise();
                // Prevent promise rejection leak
                void writableP.catch(() => { });
                this.resolveWritableP = resolveWritableP;
                this.rejectWritableP = rejectWritableP;
                await writableP;
                continue;
            }
            return;
        }
    }
    /**
     * Serialised with `this.writableWrite` by `WritableStream`.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    writableClose() {
        try {
            // This will not throw `Done` if the chunk is 0-length as it is here.
            this.connection.conn.streamSend(this.streamId, new Uint8Array(0), true);
        }
        catch (e) {
            let code;
            // If the stream is already reset, we cannot gracefully close
            if ((code = utils.isStreamStopped(e)) !== false) {
                const reason = this.codeToReason('write', code);
                const e_ = new errors.ErrorQUICStreamPeerWrite('Peer stopped the writable stream', {
                    data: { code },
                    cause: reason,
                });
                this.writableController.error(reason);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                // This fails the `close`, however no matter what
                // the writable stream is in a closed state.
                return;
            }
            else {
                // This could happen due to `InvalidStreamState`
                const e_ = new errors.ErrorQUICStreamInternal('Local stream writable could not `streamSend`', { cause: e });
                this.writableController.error(e_);
                this.dispatchEvent(new events.EventQUICStreamError({
                    detail: e_,
                }));
                throw e_;
            }
        }
        this.dispatchEvent(new events.EventQUICStreamCloseWrite());
        // [felix patch 7] Flush now, not at the end of the turn. quiche 0.18 counts the send side
        // complete once the data is acked and the final size known, whether or not the FIN was
        // sent, and collects the stream on that ACK (cloudflare/quiche#2525): an ACK processed
        // before a deferred flush dropped a zero-length FIN, and the peer never saw the end.
        this.connection.sendNow();
        return;
    }
    /**
     * `ReadableStream` ensures that this method is idempotent
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    readableCancel(reason) {
        if (this._readClosed)
            return;
        const code = this.reasonToCode('read', reason);
        // Discards buffered readable data
        try {
            // The stream may have already received `RESET_STREAM`.
            // In which case this would return `null`.
            this.connection.conn.streamShutdown(this.streamId, quiche.Shutdown.Read, code);
        }
        catch (e) {
            const e_ = new errors.ErrorQUICStreamInternal('Local stream readable could not be shutdown', { cause: e });
            this.readableController.error(e_);
            this.dispatchEvent(new events.EventQUICStreamError({
                detail: e_,
            }));
            throw e_;
        }
        const e = new errors.ErrorQUICStreamLocalRead('Closing readable stream locally', {
            data: { code },
            cause: reason,
        });
        this.readableController.error(reason);
        this.directReadError ??= reason ?? e; // [felix patch 12] later direct reads fail too
        this.rejectReadableP?.(reason);
        this.dispatchEvent(new events.EventQUICStreamError({
            detail: e,
        }));
        this.connection.scheduleSend(); // [felix patch 2]
        return;
    }
    /**
     * `WritableStream` ensures that this method is idempotent.
     *
     * @throws {errors.ErrorQUICStreamInternal}
     */
    writableAbort(reason) {
        if (this._writeClosed)
            return;
        const code = this.reasonToCode('write', reason);
        // Discards buffered writable data
        try {
            // The stream may have already received `STOP_SENDING`.
            // In which case this would return `null`.
            this.connection.conn.streamShutdown(this.streamId, quiche.Shutdown.Write, code);
        }
        catch (e) {
            const e_ = new errors.ErrorQUICStreamInternal('Local stream writable could not be shutdown', { cause: e });
            this.writableController.error(e_);
            this.dispatchEvent(new events.EventQUICStreamError({
                detail: e_,
            }));
            throw e_;
        }
        const e = new errors.ErrorQUICStreamLocalWrite('Closing writable stream locally', {
            data: { code },
            cause: reason,
        });
        this.writableController.error(reason);
        this.rejectWritableP?.(reason);
        this.dispatchEvent(new events.EventQUICStreamError({
            detail: e,
        }));
        this.connection.scheduleSend(); // [felix patch 2]
        return;
    }
};
__decorate([
    createDestroy.ready(new errors.ErrorQUICStreamDestroyed())
], QUICStream.prototype, "meta", null);
__decorate([
    createDestroy.ready(new errors.ErrorQUICStreamDestroyed(), false, [
        'destroying',
    ])
], QUICStream.prototype, "read", null);
__decorate([
    createDestroy.ready(new errors.ErrorQUICStreamDestroyed(), false, [
        'destroying',
    ])
], QUICStream.prototype, "write", null);
QUICStream = __decorate([
    createDestroy.CreateDestroy({
        eventDestroy: events.EventQUICStreamDestroy,
        eventDestroyed: events.EventQUICStreamDestroyed,
    })
], QUICStream);
export default QUICStream;
//# sourceMappingURL=QUICStream.js.map