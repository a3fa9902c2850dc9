import { AbstractError } from '@matrixai/errors';
class ErrorQUIC extends AbstractError {
    static description = 'QUIC error';
}
class ErrorQUICUndefinedBehaviour extends AbstractError {
    static description = 'You should never see this error';
}
class ErrorQUICHostInvalid extends AbstractError {
    static description = 'Host provided was not valid';
}
class ErrorQUICPortInvalid extends AbstractError {
    static description = 'Port provided was not valid';
}
class ErrorQUICConfig extends ErrorQUIC {
    static description = 'QUIC config error';
}
class ErrorQUICSocket extends ErrorQUIC {
    static description = 'QUIC Socket error';
}
class ErrorQUICSocketNotRunning extends ErrorQUICSocket {
    static description = 'QUIC Socket is not running';
}
class ErrorQUICSocketConnectionsActive extends ErrorQUICSocket {
    static description = 'QUIC Socket has active connections';
}
class ErrorQUICSocketInvalidBindAddress extends ErrorQUICSocket {
    static description = 'QUIC Socket cannot bind to the specified address';
}
class ErrorQUICSocketInvalidSendAddress extends ErrorQUICSocket {
    static description = 'QUIC Socket cannot send to the specified address';
}
class ErrorQUICSocketInternal extends ErrorQUICSocket {
    static description = 'QUIC Socket internal error';
}
class ErrorQUICClient extends ErrorQUIC {
    static description = 'QUIC Client error';
}
class ErrorQUICClientDestroyed extends ErrorQUICClient {
    static description = 'QUIC Client is destroyed';
}
class ErrorQUICClientCreateTimeout extends ErrorQUICClient {
    static description = 'QUIC Client create timeout';
}
class ErrorQUICClientSocketNotRunning extends ErrorQUICClient {
    static description = 'QUIC Client cannot be created with an unstarted shared QUIC socket';
}
class ErrorQUICClientInvalidArgument extends ErrorQUICClient {
    static description = 'QUIC Client had a failure relating to an invalid argument';
}
class ErrorQUICClientInvalidHost extends ErrorQUICClient {
    static description = 'QUIC Client cannot be created with the specified host';
}
class ErrorQUICClientInternal extends ErrorQUICClient {
    static description = 'QUIC Client internal error';
}
class ErrorQUICServer extends ErrorQUIC {
    static description = 'QUIC Server error';
}
class ErrorQUICServerNotRunning extends ErrorQUICServer {
    static description = 'QUIC Server is not running';
}
class ErrorQUICServerSocketNotRunning extends ErrorQUICServer {
    static description = 'QUIC Server cannot start with an unstarted shared QUIC socket';
}
class ErrorQUICServerNewConnection extends ErrorQUICServer {
    static description = 'QUIC Server creating a new connection';
}
class ErrorQUICServerInternal extends ErrorQUICServer {
    static description = 'QUIC Server internal error';
}
class ErrorQUICServerStopping extends ErrorQUICServer {
    static description = 'QUIC Server is stopping';
}
class ErrorQUICConnection extends ErrorQUIC {
    static description = 'QUIC Connection error';
}
class ErrorQUICConnectionStopping extends ErrorQUICConnection {
    static description = 'QUIC Connection is stopping';
}
class ErrorQUICConnectionNotRunning extends ErrorQUICConnection {
    static description = 'QUIC Connection is not running';
}
class ErrorQUICConnectionClosed extends ErrorQUICConnection {
    static description = 'QUIC Connection cannot be restarted because it has already been closed';
}
class ErrorQUICConnectionStartData extends ErrorQUIC {
    static description = 'QUIC Connection start requires data when it is a server connection';
}
class ErrorQUICConnectionStartTimeout extends ErrorQUICConnection {
    static description = 'QUIC Connection start timeout';
}
class ErrorQUICConnectionConfigInvalid extends ErrorQUICConnection {
    static description = 'QUIC connection invalid configuration';
}
class ErrorQUICConnectionLocal extends ErrorQUICConnection {
    static description = 'QUIC Connection local error';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICConnectionLocalTLS extends ErrorQUICConnectionLocal {
    static description = 'QUIC Connection local TLS error';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICConnectionPeer extends ErrorQUICConnection {
    static description = 'QUIC Connection peer error';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICConnectionPeerTLS extends ErrorQUICConnectionLocal {
    static description = 'QUIC Connection local TLS error';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICConnectionIdleTimeout extends ErrorQUICConnection {
    static description = 'QUIC Connection max idle timeout exhausted';
}
class ErrorQUICConnectionInternal extends ErrorQUICConnection {
    static description = 'QUIC Connection internal error';
}
class ErrorQUICStream extends ErrorQUIC {
    static description = 'QUIC Stream error';
}
class ErrorQUICStreamDestroyed extends ErrorQUICStream {
    static description = 'QUIC Stream is destroyed';
}
class ErrorQUICStreamLocalRead extends ErrorQUICStream {
    static description = 'QUIC Stream locally closed readable side';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICStreamLocalWrite extends ErrorQUICStream {
    static description = 'QUIC Stream locally closed writable side';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICStreamPeerRead extends ErrorQUICStream {
    static description = 'QUIC Stream peer closed readable side';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICStreamPeerWrite extends ErrorQUICStream {
    static description = 'QUIC Stream peer closed writable side';
    constructor(message = '', options) {
        super(message, options);
    }
}
class ErrorQUICStreamInternal extends ErrorQUICStream {
    static description = 'QUIC Stream internal error';
}
class ErrorQUICStreamLimit extends ErrorQUICStream {
    static description = 'QUIC Stream limit has been reached';
}
export { ErrorQUIC, ErrorQUICUndefinedBehaviour, ErrorQUICHostInvalid, ErrorQUICPortInvalid, ErrorQUICConfig, ErrorQUICSocket, ErrorQUICSocketNotRunning, ErrorQUICSocketConnectionsActive, ErrorQUICSocketInvalidBindAddress, ErrorQUICSocketInvalidSendAddress, ErrorQUICSocketInternal, ErrorQUICClient, ErrorQUICClientDestroyed, ErrorQUICClientCreateTimeout, ErrorQUICClientSocketNotRunning, ErrorQUICClientInvalidArgument, ErrorQUICClientInvalidHost, ErrorQUICClientInternal, ErrorQUICServer, ErrorQUICServerNotRunning, ErrorQUICServerSocketNotRunning, ErrorQUICServerNewConnection, ErrorQUICServerInternal, ErrorQUICServerStopping, ErrorQUICConnection, ErrorQUICConnectionStopping, ErrorQUICConnectionNotRunning, ErrorQUICConnectionClosed, ErrorQUICConnectionStartData, ErrorQUICConnectionStartTimeout, ErrorQUICConnectionConfigInvalid, ErrorQUICConnectionLocal, ErrorQUICConnectionLocalTLS, ErrorQUICConnectionPeer, ErrorQUICConnectionPeerTLS, ErrorQUICConnectionIdleTimeout, ErrorQUICConnectionInternal, ErrorQUICStream, ErrorQUICStreamDestroyed, ErrorQUICStreamLocalRead, ErrorQUICStreamLocalWrite, ErrorQUICStreamPeerRead, ErrorQUICStreamPeerWrite, ErrorQUICStreamInternal, ErrorQUICStreamLimit, };
//# sourceMappingURL=errors.js.map