export { default as QUICSocket } from './QUICSocket.js';
export { default as QUICServer } from './QUICServer.js';
export { default as QUICClient } from './QUICClient.js';
export { default as QUICConnectionMap } from './QUICConnectionMap.js';
export { default as QUICConnection } from './QUICConnection.js';
export { default as QUICConnectionId } from './QUICConnectionId.js';
export { default as QUICStream } from './QUICStream.js';
export * as utils from './utils.js';
export * as events from './events.js';
export * as errors from './errors.js';
export * as native from './native/index.js';
export * from './types.js';
//# sourceMappingURL=index.js.map