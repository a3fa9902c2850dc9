export { default as quiche } from './quiche.js';
export * from './types.js';
//# sourceMappingURL=index.js.map