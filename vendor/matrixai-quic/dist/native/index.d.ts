export { default as quiche } from './quiche.js';
export type { Quiche } from './quiche.js';
export * from './types.js';
