export * from './types.js';
export { FelixCluster, startCluster } from './cluster.js';
export * from './errors.js';
export { scaled, timeoutScale } from './limits.js';
export type { Assignment } from './cluster/served.js';
